import { randomUUID } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyServerOptions } from 'fastify'
import { resolveConfig, type Config } from './config.js'
import type { DatabaseClient } from './db/client.js'
import cors from './plugins/cors.js'
import db from './plugins/db.js'
import docs from './plugins/docs.js'
import errors from './plugins/errors.js'
import health from './plugins/health.js'
import { validatorCompiler } from './plugins/validation.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

export const API_PREFIX = '/api/v1'

export interface BuildOptions extends FastifyServerOptions {
  /** Use this open database client instead of connecting to DATABASE_URL. */
  database?: DatabaseClient
}

/**
 * The whole service as one Fastify instance. The registration order below is the product's
 * architecture: infrastructure first (errors, cors, docs, db), then the profiles under /api/v1.
 * Tests call this with explicit settings; server.ts with the environment's.
 */
export async function buildApp (settings: Partial<Config> = {}, { database, ...options }: BuildOptions = {}) {
  const config = resolveConfig(settings)
  const app = Fastify({
    bodyLimit: config.BODY_LIMIT,
    genReqId: () => randomUUID(),
    routerOptions: { ignoreTrailingSlash: true },
    ...options
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('config', config)
  app.setValidatorCompiler(validatorCompiler)

  await app.register(errors)
  await app.register(cors, { origins: config.BACKEND_CORS_ORIGINS })
  await app.register(docs)
  const migrate = config.CREATE_TABLES_ON_STARTUP
  await app.register(db, database ? { client: database, migrate } : { url: config.DATABASE_URL, migrate })

  await app.register(health, { prefix: API_PREFIX })

  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
