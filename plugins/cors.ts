import cors from '@fastify/cors'
import { Type, type Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { readOptions } from '../http/options.js'
import type { App } from '../http/types.js'
import { defineProblems } from '../http/problem-error.js'

export const corsProblems = defineProblems({ InvalidCorsOptions: { code: 'CORS_INVALID_OPTIONS', message: 'cors plugin: %s' } })
export const { InvalidCorsOptions } = corsProblems

export const CorsOptionsSchema = Type.Object({
  /** Exact origins allowed to call the API from a browser; empty means no CORS headers at all. */
  origins: Type.Array(Type.String({ pattern: '^https?://[^/]+$', errorMessage: 'must be an origin such as https://app.example.com, without a path' }), {
    default: [], errorMessage: 'must be an array of origins'
  })
})

export type CorsOptions = Partial<Static<typeof CorsOptionsSchema>>

/** CORS for the front ends named in BACKEND_CORS_ORIGINS, preflight included. */
async function corsPlugin (app: App, opts: CorsOptions) {
  const { origins } = readOptions(CorsOptionsSchema, opts, InvalidCorsOptions)
  if (origins.length === 0) return
  if (app.hasPlugin('@fastify/cors')) {
    app.log.info('cors: the app has its own @fastify/cors; BACKEND_CORS_ORIGINS is left to it')
    return
  }
  const allowed = new Set(origins)
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
