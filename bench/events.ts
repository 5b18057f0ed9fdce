import { fork, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { API_PREFIX, buildApp } from '../app.js'
import resourcePlugin from '../routes/resources/index.js'
import { main, type ChildMessage } from './child.js'
import { TaskFields } from './tasks.js'

/**
 * The change feed under 1,000 open streams: one server process (a child, so its RSS is its own),
 * the streams and the writes from this one. Reports the server's RSS per stream and, for each
 * write, the time until each stream has its event, at p50/p99 over every (write, stream) pair.
 *
 *   BENCH_DATABASE_URL=postgres://plinth@127.0.0.1:55432/plinth npx tsx bench/events.ts
 *   npx tsx bench/events.ts --streams 200 --rate 10 --seconds 10     # PGlite in the server's memory
 */

const RESOURCE = 'bench_events'
const now = () => performance.timeOrigin + performance.now()

if (process.env.BENCH_EVENTS_SERVER !== undefined) {
  main(async () => {
    const app = await buildApp({
      DATABASE_URL: process.env.BENCH_EVENTS_SERVER || 'memory://',
      LOG_LEVEL: 'silent',
      // Every stream comes from this one address, and each is a request in flight for as long as it is open.
      MAX_CONNECTIONS_PER_ADDRESS: 0,
      OVERLOAD_MAX_IN_FLIGHT: 0,
      OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 0
    }, { logger: false })
    await app.register(resourcePlugin, { prefix: API_PREFIX, name: RESOURCE, fields: TaskFields })
    // Memory is read after full collections, so it counts what the streams hold, not garbage.
    process.on('message', (message: { type: string }) => {
      if (message.type !== 'memory') return
      const gc = (globalThis as { gc?: () => void }).gc
      gc?.()
      gc?.()
      const { rss, heapUsed, external } = process.memoryUsage()
      process.send!({ type: 'memory', rss, heap: heapUsed + external })
    })
    return app
  })
} else {
  run().catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
}

/** A fresh database on the cluster of `url`, dropped at the end, so runs never see each other's rows. */
async function freshDatabase (url: string) {
  const { default: postgres } = await import('postgres')
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  const name = `plinth_bench_events_${randomBytes(4).toString('hex')}`
  await admin.unsafe(`create database ${name}`)
  const fresh = new URL(url)
  fresh.pathname = `/${name}`
  return {
    url: fresh.toString(),
    async drop () {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  }
}

interface Memory { rss: number, heap: number }

function memoryOf (child: ChildProcess): Promise<Memory> {
  return new Promise((resolve) => {
    child.on('message', function answer (message: { type: string } & Memory) {
      if (message.type !== 'memory') return
      child.off('message', answer)
      resolve(message)
    })
    child.send({ type: 'memory' })
  })
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN
const ms = (value: number) => `${value.toFixed(1)} ms`

interface Stream { close (): void }

async function run () {
  const { values } = parseArgs({
    options: { streams: { type: 'string', default: '1000' }, rate: { type: 'string', default: '20' }, seconds: { type: 'string', default: '20' } }
  })
  const STREAMS = Number(values.streams)
  const RATE = Number(values.rate)
  const SECONDS = Number(values.seconds)
  const database = process.env.BENCH_DATABASE_URL ? await freshDatabase(process.env.BENCH_DATABASE_URL) : undefined
  const child = fork(process.argv[1]!, [], {
    env: { ...process.env, BENCH_EVENTS_SERVER: database?.url ?? '' },
    execArgv: [...process.execArgv, '--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  try {
    const [ready] = await once(child, 'message') as [ChildMessage]
    if (ready.type !== 'ready') throw new Error('the server did not start')
    const base = `http://127.0.0.1:${ready.port}${API_PREFIX}/${RESOURCE}`
    const agent = new Agent({ keepAlive: true, maxSockets: Infinity })
    const sent = new Map<number, { at: number, answered?: number }>()
    const delays: number[] = []
    const afterAnswer: number[] = []
    let delivered = 0

    async function write (seq: number) {
      const body = JSON.stringify({ title: `w${seq}`, tags: ['bench'] })
      const entry: { at: number, answered?: number } = { at: now() }
      sent.set(seq, entry)
      const req = request(`${base}/`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } })
      req.end(body)
      const [res] = await once(req, 'response')
      res.resume()
      await once(res, 'end')
      entry.answered = now()
      if (res.statusCode !== 201) throw new Error(`POST: ${res.statusCode}`)
    }

    function open (): Promise<Stream> {
      return new Promise((resolve, reject) => {
        const req = request(`${base}/events`, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
          if (res.statusCode !== 200) return reject(new Error(`GET events: ${res.statusCode}`))
          res.setEncoding('utf8')
          let text = ''
          let opened = false
          res.on('data', (chunk: string) => {
            const at = now()
            text += chunk
            for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n')) {
              const block = text.slice(0, end)
              text = text.slice(end + 2)
              if (!opened && block.startsWith('id:')) {
                opened = true
                resolve({ close: () => req.destroy() })
              }
              const seq = /"title":"w(\d+)"/.exec(block)?.[1]
              const write = seq === undefined ? undefined : sent.get(Number(seq))
              if (write === undefined) continue
              delivered++
              delays.push(at - write.at)
              if (write.answered !== undefined) afterAnswer.push(at - write.answered)
            }
          })
        })
        req.once('error', reject)
        req.end()
      })
    }

    // Warm the server's paths once: a write, a stream.
    const warm = await open()
    await write(-1)
    warm.close()
    sent.clear()
    const before = await memoryOf(child)
    const streams: Stream[] = []
    const started = now()
    while (streams.length < STREAMS) streams.push(...await Promise.all(Array.from({ length: Math.min(100, STREAMS - streams.length) }, open)))
    const openSeconds = (now() - started) / 1000
    const after = await memoryOf(child)
    delays.length = 0
    afterAnswer.length = 0
    delivered = 0

    const writes: Array<Promise<void>> = []
    const total = RATE * SECONDS
    const begin = now()
    for (let seq = 0; seq < total; seq++) {
      const due = begin + seq * 1000 / RATE
      const wait = due - now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      writes.push(write(seq))
    }
    await Promise.all(writes)
    // The last events' way to every stream.
    const allDelivered = () => delivered >= total * STREAMS
    for (const deadline = now() + 10_000; !allDelivered() && now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 50))
    for (const stream of streams) stream.close()

    delays.sort((a, b) => a - b)
    afterAnswer.sort((a, b) => a - b)
    const report = {
      database: database ? 'postgresql' : 'pglite (in the server process)',
      streams: STREAMS,
      openSeconds: Number(openSeconds.toFixed(1)),
      rssBeforeMiB: Number((before.rss / 2 ** 20).toFixed(1)),
      rssAfterMiB: Number((after.rss / 2 ** 20).toFixed(1)),
      rssPerStreamKiB: Number(((after.rss - before.rss) / STREAMS / 1024).toFixed(1)),
      heapPerStreamKiB: Number(((after.heap - before.heap) / STREAMS / 1024).toFixed(1)),
      writes: total,
      writesPerSecond: RATE,
      delivered: `${delivered} of ${total * STREAMS}`,
      fromRequest: { p50: ms(percentile(delays, 0.5)), p99: ms(percentile(delays, 0.99)), max: ms(delays.at(-1) ?? NaN) },
      fromResponse: { p50: ms(percentile(afterAnswer, 0.5)), p99: ms(percentile(afterAnswer, 0.99)) }
    }
    console.log(JSON.stringify(report, null, 2))
  } finally {
    child.disconnect()
    await once(child, 'exit')
    await database?.drop()
  }
}
