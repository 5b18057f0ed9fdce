import { Agent, get } from 'node:http'
import { performance } from 'node:perf_hooks'
import autocannon from 'autocannon'
import type { Target } from './cluster-topology.js'

// Requests each connection draws at random, once, so no single row or cached page stands for the table.
const DRAWS = 1000

export interface Shot {
  /** 2xx answers per second. */
  okPerSec: number
  /** Of the 2xx answers, in ms. */
  p50: number
  p99: number
  non2xx: number
  errors: number
}

export interface Shape {
  connections: number
  /** Requests per second, sent evenly spaced (see `paced`); unset for as many as the target answers. */
  rate?: number
}

const TIMEOUT_MS = 10_000

function percentile (sorted: number[], p: number) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]! : NaN
}

/** A run of `shape`: paced when it has a rate, else autocannon at saturation. */
export const measure = (target: Target, paths: string[], seconds: number, shape: Shape) =>
  shape.rate ? paced(target, paths, seconds, shape.rate, shape.connections) : shoot(target, paths, seconds, shape)

/**
 * One autocannon run of GETs of `paths`, drawn at random. Latencies are taken from each response
 * to the microsecond: autocannon's own histogram has whole milliseconds, coarser than what is measured.
 */
export async function shoot (target: Target, paths: string[], seconds: number, { connections }: Shape): Promise<Shot> {
  const options = {
    url: target.url,
    connections,
    duration: seconds,
    setupClient: (client: autocannon.Client) => client.setRequests(Array.from({ length: DRAWS }, () => ({ method: 'GET', path: paths[Math.floor(Math.random() * paths.length)]! })))
  }
  const latencies: number[] = []
  const instance = autocannon(options)
  instance.on('response', (_client, status, _bytes, ms) => { if (status >= 200 && status < 300) latencies.push(ms) })
  const result = await instance
  latencies.sort((a, b) => a - b)
  return {
    okPerSec: latencies.length / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    non2xx: result.non2xx,
    errors: result.errors
  }
}

/**
 * GETs sent at `rate` per second, evenly spaced, over at most `connections` kept-alive sockets, whatever
 * the answers' pace (open loop). autocannon's overallRate sends each connection's quota for the second back
 * to back as the second starts: a burst whose queueing it would measure instead of the hops'. A request
 * waiting for a free socket counts that wait in its latency.
 */
export async function paced (target: Target, paths: string[], seconds: number, rate: number, connections: number): Promise<Shot> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const latencies: number[] = []
  const shot = { non2xx: 0, errors: 0 }
  const inFlight = new Set<Promise<void>>()
  const send = (path: string) => {
    const started = performance.now()
    const done = new Promise<void>((resolve) => {
      const req = get(`${target.url}${path}`, { agent, timeout: TIMEOUT_MS }, (res) => {
        res.resume()
        res.once('end', () => {
          if (res.statusCode! >= 200 && res.statusCode! < 300) latencies.push(performance.now() - started)
          else shot.non2xx++
          resolve()
        })
      })
      req.once('timeout', () => req.destroy(new Error('timeout')))
      req.once('error', () => { shot.errors++; resolve() })
    })
    inFlight.add(done)
    done.finally(() => inFlight.delete(done))
  }
  const start = performance.now()
  let sent = 0
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = (performance.now() - start) / 1000
      if (elapsed >= seconds) {
        clearInterval(timer)
        resolve()
        return
      }
      for (const due = Math.floor(elapsed * rate); sent < due; sent++) send(paths[Math.floor(Math.random() * paths.length)]!)
    }, 1)
  })
  await Promise.all(inFlight)
  agent.destroy()
  latencies.sort((a, b) => a - b)
  return { okPerSec: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), ...shot }
}
