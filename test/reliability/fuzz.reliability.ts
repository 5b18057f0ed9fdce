import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import type { App } from '../../app.js'
import { build, captureLogs } from '../support/app.js'
import { TEST_DATABASE_URL } from '../support/database.js'
import { httpRequest } from '../support/http.js'
import { Tally, contractViolation, describeExchange, type Answer } from './fuzz-contract.js'
import { operationsOf, type OpenApiDocument } from './fuzz-openapi.js'
import { exchange, fixedCases, generatedCase, parseResponses, rawTargets } from './fuzz-raw.js'
import { draftFor } from './fuzz-requests.js'
import { FuzzSession } from './fuzz-session.js'

const SEED = Number(process.env.FUZZ_SEED || 20261122)
// Per route; the default takes about two minutes here on PGlite.
const RUNS = Number(process.env.FUZZ_RUNS || 200)
if (!Number.isSafeInteger(SEED) || !Number.isSafeInteger(RUNS) || RUNS < 1) throw new Error('FUZZ_SEED must be an integer, FUZZ_RUNS a positive one')
const RAW_RUNS = Math.max(1, Math.round(RUNS / 2))
const HEALTH_EVERY = 250

const settings = {
  FIRST_SUPERUSER_EMAIL: 'root@fuzz.example.com',
  FIRST_SUPERUSER_PASSWORD: 'the fuzzer superuser password',
  // Known, so the fuzzer can forge well-signed tokens with hostile claims.
  SECRET_KEY: 'fuzz-signing-key-of-at-least-32-bytes',
  // Wrong passwords are half of what it sends: a lockout would lock the accounts it logs in with.
  LOGIN_MAX_FAILURES: 0
}

t.comment(`FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} on ${TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'}`)

const mib = (bytes: number) => Math.round(bytes / 2 ** 20)
const clip = (text: string, length = 4000) => text.length > length ? `${text.slice(0, length)}...` : text

/** The error the server logged for the request a 500's detail names, if any. */
function loggedError (lines: Array<Record<string, unknown>>, payload: string) {
  const id = /request ([0-9a-f-]{36})/.exec(payload)?.[1]
  const line = id && lines.find((entry) => entry.reqId === id)
  return line ? `\nlogged: ${clip(JSON.stringify(line.err), 2000)}` : ''
}

async function assertHealthy (app: App) {
  const res = await app.inject('/api/v1/health')
  if (res.statusCode !== 200) throw new Error(`health answered ${res.statusCode}: ${res.payload}`)
}

/**
 * Runs a property and turns a counterexample into one failed assertion that says how to replay
 * it. True when every run passed.
 */
async function check<T> (t: Test, name: string, property: fc.IAsyncProperty<T>, seed: number, numRuns: number) {
  const details = await fc.check(property, { seed, numRuns })
  if (!details.failed) return t.pass(`${name}: ${numRuns} runs (seed ${seed})`)
  const counterexample = clip(fc.stringify(details.counterexample), 1500)
  return t.fail(`${name}: ${clip(String(details.errorInstance))}\nseed ${details.seed}, path ${details.counterexamplePath}\ncounterexample: ${counterexample}`)
}

t.test('no request makes the service answer a 5xx or a 4xx that is not a problem document', async (t) => {
  const started = Date.now()
  // A 5xx is logged with its error: the failure quotes it.
  const logs = captureLogs()
  const app = await build(t, settings, { logger: { ...logs.logger, level: 'error' } })
  const doc = (await app.inject('/docs/json')).json() as OpenApiDocument
  const ops = operationsOf(doc)
  t.ok(ops.length >= 20, `the OpenAPI document lists ${ops.length} routes`)
  const session = await FuzzSession.open(app, settings)
  const rssBefore = process.memoryUsage().rss
  const tally = new Tally()
  let sent = 0

  for (const [index, op] of ops.entries()) {
    const route = `${op.method} ${op.path}`
    const drafts = draftFor(op, { bodyLimit: app.plinthConfig.BODY_LIMIT, liveBody: session.hasLiveBody(op) })
    const passed = await check(t, route, fc.asyncProperty(drafts, async (draft) => {
      const request = await session.request(op, draft)
      const res = await app.inject(request)
      const answer: Answer = { statusCode: res.statusCode, headers: res.headers, body: res.payload }
      tally.count(draft.method === op.method ? route : 'other methods', res.statusCode)
      const violation = contractViolation(answer)
      if (violation) {
        const written = `${request.method} ${request.url} ${JSON.stringify(request.headers)} ${request.payload ?? ''}`
        throw new Error(`${violation}\n${describeExchange(written, answer)}${loggedError(logs.lines, res.payload)}`)
      }
      await session.learn(op, draft.method, res.statusCode, res.payload)
      if (++sent % HEALTH_EVERY === 0) await assertHealthy(app)
    }), SEED + index, RUNS)
    // A failed property stops early; its 2xx count then says nothing.
    if (passed) t.ok(tally.successes(route) > 0, `${route}: valid requests succeed too (${tally.successes(route)} 2xx)`)
  }
  t.comment(tally.summary())

  await assertHealthy(app)
  t.equal((await app.inject('/api/v1/health/ready')).statusCode, 200, 'the database still answers')

  // Over a real socket, for the bytes and framing inject cannot express.
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const raw = new Tally()
  const healthOverHttp = async () => (await httpRequest(`http://127.0.0.1:${port}`, '/api/v1/health')).status
  const sendRaw = async (name: string, bytes: Buffer) => {
    for (const answer of parseResponses(await exchange(port, bytes))) {
      raw.count(name, answer.statusCode)
      const violation = contractViolation(answer)
      if (violation) throw new Error(`${name}: ${violation}\n${describeExchange(JSON.stringify(bytes.toString('latin1')), answer)}`)
    }
  }
  for (const [name, bytes] of fixedCases(app.plinthConfig.BODY_LIMIT)) {
    await t.resolves(sendRaw(name, bytes), name)
  }
  t.equal(await healthOverHttp(), 200, 'health answers over HTTP after the fixed raw cases')
  let rawSent = 0
  await check(t, 'generated raw requests', fc.asyncProperty(generatedCase(rawTargets(ops)), async (bytes) => {
    await sendRaw('generated', bytes)
    if (++rawSent % 50 === 0 && await healthOverHttp() !== 200) throw new Error('health stopped answering 200')
  }), SEED + ops.length, RAW_RUNS)
  t.comment(raw.summary())

  t.equal(await healthOverHttp(), 200, 'health answers 200 over HTTP at the end')
  t.comment(`${tally.total()} injected and ${raw.total()} raw responses in ${Math.round((Date.now() - started) / 1000)} s, RSS ${mib(rssBefore)} MiB before, ${mib(process.memoryUsage().rss)} MiB after`)
})
