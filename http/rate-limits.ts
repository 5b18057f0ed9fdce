import rateLimit, { normalizeIP, type FastifyRateLimitStore, type FastifyRateLimitStoreCtor, type RateLimitOptions } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import type { RateCounter } from '../db/rate-limits.js'
import { httpProblems } from './errors.js'
import { canonicalUrl } from './trailing-slash.js'
import type { App } from './types.js'

const { RateLimited } = httpProblems

/** @fastify/rate-limit's store on the database's counters, which every server process shares. */
function storeOn (counter: RateCounter): FastifyRateLimitStoreCtor {
  return class DatabaseStore implements FastifyRateLimitStore {
    incr (key: string, callback: (error: Error | null, result?: { current: number, ttl: number }) => void, timeWindow: number) {
      counter.hit(key, timeWindow).then((hit) => callback(null, hit), callback)
    }

    child () {
      return this
    }
  }
}

/** The client a request comes from, as every per-address limit counts it: an IPv6 client by its /64, as it can use any address in it. */
export const clientAddress = (request: FastifyRequest) => normalizeIP(request.ip)

/** One counter per route and client address: a route's trailing-slash alias counts with it. */
const keyOf = (request: FastifyRequest) => `${canonicalUrl(request.routeOptions.url!)} ${clientAddress(request)}`

/** @fastify/rate-limit counted in the database, for routes that ask (`limit()`): 429 with Retry-After, RateLimit-* on every answer. */
export async function registerRateLimits (app: App, counter: RateCounter) {
  await app.register(rateLimit, {
    global: false,
    enableDraftSpec: true,
    store: storeOn(counter),
    keyGenerator: keyOf,
    errorResponseBuilder: (request, { ttl }) => new RateLimited(canonicalUrl(request.routeOptions.url!), Math.max(1, Math.ceil(ttl / 1000)))
  })
}

export const limit = (max: number, windowSeconds: number): { rateLimit: RateLimitOptions | false } =>
  ({ rateLimit: max > 0 ? { max, timeWindow: windowSeconds * 1000 } : false })
