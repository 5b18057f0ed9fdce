import { Agent, request, type IncomingHttpHeaders } from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { httpRequest } from './http.js'

/** One request of a load mix; `kind` names it in the outcomes. */
export interface Call {
  kind: string
  method: 'GET' | 'POST'
  path: string
  body?: unknown
}

/** Creates, half catalog items and half `records`: a write load whose 201s carry the new id. */
export const writes = (loop: number, n: number): Call => n % 2 === 0
  ? { kind: 'item', method: 'POST', path: '/api/v1/items', body: { name: `item ${loop}-${n}`, price: n } }
  : { kind: 'record', method: 'POST', path: '/api/v1/records/', body: { title: `record ${loop}-${n}` } }

/** What became of one request. Times are `performance.now()` readings, comparable with the test's. */
export interface Outcome {
  kind: string
  /** The request loop that sent it. */
  loop: number
  start: number
  end: number
  /** The HTTP status, or undefined when there was no complete response. */
  status?: number
  /** Why there was no complete response: the socket-level code (ECONNREFUSED, ECONNRESET...) or TIMEOUT. */
  error?: string
  /** The id a 201 acknowledged. */
  id?: number
  /** The `code` of a problem document. */
  code?: string
  contentType?: string
  retryAfter?: string
}

export interface LoadOptions {
  base: string
  /** Request loops running at once, each waiting for its answer before it sends the next. */
  concurrency: number
  /** The request that loop `loop` sends as its `n`th. */
  next: (loop: number, n: number) => Call
  /** The load stops by itself after this long, whatever the test does. */
  maxMs: number
  /** A request whose connection stays silent this long counts as a TIMEOUT. */
  requestTimeoutMs?: number
  /** A pause between the requests of one loop, to keep the load steady rather than saturating. */
  pauseMs?: number
}

function outcomeOf (call: Call, loop: number, start: number, status: number, headers: IncomingHttpHeaders, text: string): Outcome {
  const outcome: Outcome = { kind: call.kind, loop, start, end: performance.now(), status }
  const contentType = headers['content-type']
  if (contentType) outcome.contentType = contentType
  const retryAfter = headers['retry-after']
  if (retryAfter) outcome.retryAfter = retryAfter
  const body = text && contentType?.includes('json') ? JSON.parse(text) : undefined
  if (status === 201) outcome.id = body.id
  if (typeof body?.code === 'string') outcome.code = body.code
  return outcome
}

function send (agent: Agent, base: string, call: Call, loop: number, timeoutMs: number): Promise<Outcome> {
  const start = performance.now()
  const body = call.body === undefined ? undefined : JSON.stringify(call.body)
  return new Promise((resolve) => {
    const fail = (err: NodeJS.ErrnoException) => resolve({ kind: call.kind, loop, start, end: performance.now(), error: err.code ?? err.message })
    const req = request(base + call.path, {
      method: call.method,
      agent,
      headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    })
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error('no answer'), { code: 'TIMEOUT' })))
    req.once('error', fail)
    req.once('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.once('error', fail)
      res.once('end', () => resolve(outcomeOf(call, loop, start, res.statusCode as number, res.headers, text)))
    })
    req.end(body)
  })
}

/**
 * N request loops against `base` until `stop()` or `maxMs`. Every request ends as one outcome:
 * a status, or the error that left it without an answer. Each loop keeps its own keep-alive
 * connection, as a proxy's connection pool does, and opens a new one only when the server closed
 * it; fetch's pool (undici) also opens new connections under steady load (46 for 32 loops in 8 s
 * here), and those race a shutdown in the listener's accept queue.
 */
export function startLoad ({ base, concurrency, next, maxMs, requestTimeoutMs = 30_000, pauseMs = 0 }: LoadOptions) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const outcomes: Outcome[] = []
  const stopping = new AbortController()
  const deadline = setTimeout(() => stopping.abort(), maxMs)

  async function loop (index: number) {
    for (let n = 0; !stopping.signal.aborted; n++) {
      outcomes.push(await send(agent, base, next(index, n), index, requestTimeoutMs))
      if (pauseMs > 0) await sleep(pauseMs)
    }
  }
  const done = Promise.all(Array.from({ length: concurrency }, (_, index) => loop(index)))
    .then(() => {
      clearTimeout(deadline)
      agent.destroy()
      return outcomes
    })

  return {
    outcomes,
    /**
     * Resolves once every loop has had an answer, so each one's connection has been accepted
     * (PGlite under load starves the accept queue: one connection per 0.5 s here), and at least
     * `count` requests have ended; or after `timeoutMs`.
     */
    async warmedUp (count: number, timeoutMs = 30_000) {
      const ready = () => outcomes.length >= count && new Set(outcomes.map((outcome) => outcome.loop)).size === concurrency
      for (const started = Date.now(); !ready() && Date.now() - started < timeoutMs;) await sleep(50)
    },
    /** No new requests; resolves when those under way have ended. */
    stop () {
      stopping.abort()
      return done
    }
  }
}

/** Outcomes counted by `kind status` or `kind error`, for assertions and reports. */
export function tally (outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const { kind, status, error } of outcomes) {
    const key = `${kind} ${status ?? error}`
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

/** The ids that 201 answers acknowledged for requests of `kind`, ascending. */
export function acknowledged (outcomes: Outcome[], kind: string): number[] {
  return outcomes.filter((outcome) => outcome.kind === kind && outcome.status === 201)
    .map((outcome) => outcome.id as number)
    .sort((a, b) => a - b)
}

/**
 * Every id the API lists at `path`, page by page until an empty page: `items` envelopes (the
 * catalog) and plain arrays (resources) alike.
 */
export async function listedIds (base: string, path: string): Promise<number[]> {
  const ids: number[] = []
  for (;;) {
    const res = await httpRequest(base, `${path}?offset=${ids.length}&limit=100`)
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`)
    const body = res.json as Array<{ id: number }> | { items: Array<{ id: number }> }
    const page = Array.isArray(body) ? body : body.items
    if (page.length === 0) return ids
    ids.push(...page.map((row) => row.id))
  }
}
