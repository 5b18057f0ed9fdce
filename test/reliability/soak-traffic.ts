import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'

/** What became of one request: the status it got, or why it got none. */
export interface Outcome {
  route: string
  expected: number
  status?: number
  /** The socket-level code (ECONNRESET, ECONNREFUSED...) or TimeoutError. */
  error?: string
  ms: number
}

export interface Call {
  /** The route as the summary names it, e.g. `GET /items/:id`. */
  route: string
  expected: number
  path: string
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'
  json?: unknown
  form?: Record<string, string>
  token?: string
}

/** A request that did not get the status its scenario expects; the scenario stops there. */
export class Unexpected extends Error {}

interface Exchange {
  agent: Agent
  method: string
  headers: Record<string, string>
  body?: string
  timeoutMs: number
}

/** One request: the status and body, or the socket error (or TimeoutError) that ended it. */
function exchange (url: URL, { agent, method, headers, body, timeoutMs }: Exchange) {
  return new Promise<{ status: number, text: string }>((resolve, reject) => {
    const req = request(url, { agent, method, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
      res.on('error', reject)
    })
    const timer = setTimeout(() => req.destroy(Object.assign(new Error('no answer'), { code: 'TimeoutError' })), timeoutMs)
    req.on('error', reject)
    req.on('close', () => clearTimeout(timer))
    req.end(body)
  })
}

/** Sends requests to `base` and records every outcome; a request unanswered after `timeoutMs` is a TimeoutError. */
export function client (base: string, timeoutMs: number) {
  const outcomes: Outcome[] = []
  // node:http rather than fetch, which took 2.5 times the CPU (6.5 s against 2.6 s for 40 s of this
  // soak): on 2 busy cores a fetch-based generator fell seconds behind its own timers. Idle sockets
  // are dropped after 60 s, before the server's keep-alive timeout (72 s) could close one under a request.
  const agent = new Agent({ keepAlive: true, timeout: 60_000 })

  async function send ({ route, expected, path, method, json, form, token }: Call): Promise<any> {
    const headers: Record<string, string> = {}
    if (token) headers.authorization = `Bearer ${token}`
    if (json !== undefined) headers['content-type'] = 'application/json'
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded'
    const body = form ? new URLSearchParams(form).toString() : json === undefined ? undefined : JSON.stringify(json)
    const start = performance.now()
    const outcome: Outcome = { route, expected, ms: 0 }
    outcomes.push(outcome)
    let text = ''
    try {
      const answer = await exchange(new URL(path, base), {
        agent, method: method ?? (body === undefined ? 'GET' : 'POST'), headers, body, timeoutMs
      })
      outcome.status = answer.status
      text = answer.text
    } catch (err) {
      outcome.error = (err as NodeJS.ErrnoException).code ?? String(err)
    }
    outcome.ms = performance.now() - start
    if (outcome.status !== expected) throw new Unexpected(`${route}: ${outcome.status ?? outcome.error}, expected ${expected}`)
    return text ? JSON.parse(text) : undefined
  }

  return { outcomes, send, close: () => agent.destroy() }
}

export type Client = ReturnType<typeof client>

export interface Stream {
  name: string
  perSecond: number
  /** One run of the stream's scenario; an Unexpected ends it, any other error is a bug of the test. */
  run: () => Promise<void>
}

export interface Ticks {
  name: string
  perSecond: number
  fired: number
  /** Ticks not fired: the timer came more than a second late, or too many runs were still going. */
  skipped: number
}

/**
 * Starts `stream.run` `perSecond` times a second until `until` (a performance.now() time), without
 * waiting for the previous runs: open loop, so slow answers do not lower the rate. A tick that
 * comes late because this process was not scheduled still fires, but one more than a second late
 * is skipped: a stall is reported, never made up for with a burst. Resolves when every run has ended.
 */
export async function atFixedRate (stream: Stream, until: number, maxInFlight: number): Promise<Ticks> {
  const period = 1000 / stream.perSecond
  const ticks: Ticks = { name: stream.name, perSecond: stream.perSecond, fired: 0, skipped: 0 }
  const runs: Array<Promise<void>> = []
  let inFlight = 0
  // A random phase, so the streams' ticks do not all land in the same millisecond.
  const first = performance.now() + Math.random() * period
  for (let k = 0; first + k * period < until; k++) {
    const due = first + k * period
    await sleep(Math.max(0, due - performance.now()))
    if (performance.now() - due > 1000 || inFlight >= maxInFlight) {
      ticks.skipped++
      continue
    }
    ticks.fired++
    inFlight++
    runs.push(stream.run()
      .catch((err: unknown) => { if (!(err instanceof Unexpected)) throw err })
      .finally(() => { inFlight-- }))
  }
  await Promise.all(runs)
  return ticks
}
