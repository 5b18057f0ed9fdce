import autocannon from 'autocannon'
import { toSample, type Sample } from './report.js'
import type { Scenario } from './scenario.js'
import type { Server } from './servers.js'

export const CONNECTIONS = 50

/**
 * A prepared scenario: what autocannon sends (`requests`, when present, rewrites it per request;
 * `perConnection` gives each connection its own list).
 */
export interface Request {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
  requests?: autocannon.Request[]
  perConnection?: () => autocannon.Request[]
  /** A status answered by design, not counted as non-2xx (a revalidation's 304). */
  expect?: number
}

export const BARE: Request = { method: 'GET', path: '/', headers: {} }

export async function prepare (scenario: Scenario, baseUrl: string, quick: boolean): Promise<Request> {
  const extra = (await scenario.setup?.(baseUrl, { quick })) ?? {}
  const { path, body, headers, requests, perConnection } = { ...scenario, ...extra }
  if (!path.startsWith('/')) throw new Error(`scenario ${scenario.name}: path must start with / (got "${path}")`)
  const json = body !== undefined && typeof body !== 'string'
  return {
    method: scenario.method ?? 'GET',
    path,
    headers: { ...(json ? { 'content-type': 'application/json' } : {}), ...headers },
    body: json ? JSON.stringify(body) : body as string | undefined,
    ...(requests ? { requests } : {}),
    ...(perConnection ? { perConnection } : {}),
    ...(scenario.expect ? { expect: scenario.expect } : {})
  }
}

export interface Measured extends Sample {
  /** The server's largest RSS seen during the run, in bytes. */
  peakRss: number
  /** Responses per second, second by second. */
  perSecond: number[]
}

/** One autocannon run of `seconds` against `server`, sampling its RSS twice a second. */
export async function load (server: Server, request: Request, seconds: number): Promise<Measured> {
  const { path, perConnection, expect, ...rest } = request
  const options: autocannon.Options = { url: server.url + path, connections: CONNECTIONS, duration: seconds, ...rest }
  if (perConnection) options.setupClient = (client) => client.setRequests(perConnection())
  let peakRss = await server.rss()
  const perSecond: number[] = []
  const sampler = setInterval(() => {
    server.rss().then((rss) => { peakRss = Math.max(peakRss, rss) }, () => {})
  }, 500)
  try {
    const instance = autocannon(options)
    instance.on('tick', ({ counter }) => perSecond.push(counter))
    const result = await instance
    return { ...toSample(result, expect), peakRss: Math.max(peakRss, await server.rss()), perSecond }
  } finally {
    clearInterval(sampler)
  }
}
