import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import type { App } from '../http/types.js'

export interface CorsOptions {
  /** Exact origins allowed to call the API from a browser; empty means no CORS headers at all. */
  origins: string[]
}

/** CORS for the front ends named in BACKEND_CORS_ORIGINS, preflight included. */
async function corsPlugin (app: App, opts: CorsOptions) {
  if (opts.origins.length === 0) return
  if (app.hasPlugin('@fastify/cors')) {
    app.log.info('cors: the app has its own @fastify/cors; BACKEND_CORS_ORIGINS is left to it')
    return
  }
  const allowed = new Set(opts.origins)
  await app.register(cors, {
    // A function, not the list, so matching is exact: no prefix or regex surprises.
    origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin)),
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type'],
    exposedHeaders: ['WWW-Authenticate', 'Retry-After', 'Link', 'X-Total-Count'],
    maxAge: 600
  })
}

export default fp(corsPlugin, { name: 'plinth-cors', fastify: '5.x' })
