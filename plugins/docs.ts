// Kept in the declarations: a host that imports plinth gets @fastify/swagger's typed app.swagger().
/// <reference types="@fastify/swagger" preserve="true" />
import swagger, { type SwaggerTransform } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { Type } from '@sinclair/typebox'
import type { onSendHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { problemResponses } from '../schemas/error.js'
import { openapiDocument } from '../http/openapi-document.js'
import { nameSwaggerComponents } from '../http/openapi-names.js'
import { serializeProblemsAsSent } from '../http/problem-serialization.js'
import { readOptions } from '../http/options.js'
import { assertBeforeRoutes } from '../http/order.js'
import { markPlinthRoutes } from '../http/plinth-routes.js'
import type { App } from '../http/types.js'
import { defineProblems } from '../http/problem-error.js'

export const docsProblems = defineProblems({ InvalidDocsOptions: { code: 'DOCS_INVALID_OPTIONS', message: 'docs plugin: %s' } })
export const { InvalidDocsOptions } = docsProblems

const ServerSchema = Type.Object({
  url: Type.String({ minLength: 1, errorMessage: 'must be a URL such as https://api.example.com or /api' }),
  description: Type.Optional(Type.String()),
  variables: Type.Optional(Type.Record(Type.String(), Type.Object({
    default: Type.String(),
    enum: Type.Optional(Type.Array(Type.String())),
    description: Type.Optional(Type.String())
  }), { errorMessage: 'must be an object of { default, enum?, description? } by variable name' }))
})

/** The document's `info` and `servers`; a host's own @fastify/swagger keeps its own. */
export const DocsOptionsSchema = Type.Object({
  title: Type.String({ minLength: 1, default: 'plinth', errorMessage: 'must be a non-empty string' }),
  version: Type.String({ minLength: 1, default: '0.1.0', errorMessage: 'must be a non-empty string such as 1.0.0' }),
  description: Type.String({ default: 'Accounts and sessions, an item catalog and generic resources, under /api/v1.', errorMessage: 'must be a string (CommonMark)' }),
  // None by default: clients then call the origin they loaded the document from.
  servers: Type.Optional(Type.Array(ServerSchema, { errorMessage: 'must be an array of { url, description?, variables? }' }))
})

export type DocsOptions = Partial<typeof DocsOptionsSchema.static>

export const DOCS_PREFIX = '/docs'

type ObjectSchema = { properties?: Record<string, { default?: unknown }>, required?: string[] }
type SecuritySchemes = Record<string, object>

/** A defaulted query parameter may be left out (Ajv fills it in), so the document's copy does not list it as required. */
function optionalDefaults (querystring: unknown) {
  const { properties, required } = (querystring ?? {}) as ObjectSchema
  if (!properties || !required) return querystring
  return { ...(querystring as object), required: required.filter((name) => properties[name]?.default === undefined) }
}

type ListSchema = { type?: unknown, description?: string, maxItems?: number }

/** An `in` filter is checked as an array, but written as one comma-separated value (`status[in]=open,doing`): so the document says. */
function commaSeparatedLists (querystring: unknown) {
  const { properties } = (querystring ?? {}) as { properties?: Record<string, ListSchema> }
  if (!properties || !Object.keys(properties).some((name) => name.endsWith('[in]'))) return querystring
  const asText = ({ description, maxItems }: ListSchema) =>
    ({ type: 'string', minLength: 1, description: `${description ?? 'Comma-separated values'}${maxItems === undefined ? '' : `, at most ${maxItems}`}` })
  const written = Object.entries(properties).map(([name, schema]) => [name, name.endsWith('[in]') && schema.type === 'array' ? asText(schema) : schema])
  return { ...(querystring as object), properties: Object.fromEntries(written) }
}

type RouteSchema = { params?: unknown, consumes?: string[], response?: Record<string, unknown> }

/** The statuses any route may answer beside its own: unparsable, too long or too large, an unsupported type, a 500, a 503. */
function withSharedStatuses ({ params, consumes, response = {} }: RouteSchema, method: string) {
  // The token endpoints answer a body of another type with an OAuth invalid_request (400).
  const takesBody = method !== 'GET' && method !== 'HEAD'
  const bodyStatuses = !takesBody ? [] : consumes?.includes('application/x-www-form-urlencoded') ? [413] : [413, 415]
  const missing = [400, ...(params === undefined ? [] : [414]), ...bodyStatuses, 500, 503].filter((status) => !(status in response))
  return { ...response, ...problemResponses(...missing) }
}

// Security schemes declared so far, per document: a guarded route may precede the accounts plugin that declares the login scheme.
const schemesOf = new WeakMap<object, SecuritySchemes>()

/**
 * Documents a profile's routes in whichever @fastify/swagger the app has, declaring the security schemes they use;
 * marks them as plinth's (their security headers) and sends their problem documents as built.
 */
export function documentRoutes (app: App, securitySchemes: SecuritySchemes = {}) {
  markPlinthRoutes(app)
  serializeProblemsAsSent(app)
  const swaggerOf = (app as { swagger?: object }).swagger
  if (swaggerOf === undefined) return
  const declared = schemesOf.get(swaggerOf) ?? {}
  schemesOf.set(swaggerOf, Object.assign(declared, securitySchemes))
  const swaggerTransform: SwaggerTransform = ({ schema, url, route, ...document }) => {
    if ('openapiObject' in document) {
      const components = ((document.openapiObject as { components?: { securitySchemes?: SecuritySchemes } }).components ??= {})
      const schemes = (components.securitySchemes ??= {})
      for (const [name, scheme] of Object.entries(declared)) schemes[name] ??= scheme
    }
    if (!schema) return { url, schema }
    // A guard without the accounts plugin has no login scheme to point at: the route is then documented without one.
    const security = schema.security?.filter((requirement) => Object.keys(requirement).every((name) => name in declared))
    const response = schema.hide ? schema.response : withSharedStatuses(schema as RouteSchema, String(route.method))
    return { url, schema: { ...schema, response, querystring: commaSeparatedLists(optionalDefaults(schema.querystring)), ...(security ? { security } : {}) } }
  }
  app.addHook('onRoute', function documented (route) {
    route.config = { ...route.config, swaggerTransform }
  })
}

/** Swagger UI's files keep their names across versions: cached for a week, not forever, then revalidated by ETag. */
const cachedForAWeek: onSendHookHandler = function cachedForAWeek (_request, reply, payload, done) {
  if (reply.statusCode === 200) reply.header('cache-control', `public, max-age=${7 * 24 * 3600}`)
  done(null, payload)
}

/** OpenAPI 3.1 from the route schemas, and Swagger UI at /docs; a host's own @fastify/swagger is kept, gets plinth's routes and names its components. */
async function docsPlugin (app: App, opts: DocsOptions) {
  const { title, version, description, servers } = readOptions(DocsOptionsSchema, opts, InvalidDocsOptions)
  if (app.hasDecorator('swagger')) {
    const unused = Object.keys(DocsOptionsSchema.properties).filter((name) => name in opts)
    if (unused.length > 0) app.log.warn(`docs: the app has its own @fastify/swagger, which sets the document's ${unused.join(', ')}: docsPlugin's are not used`)
    else app.log.info('docs: the app has its own @fastify/swagger; plinth\'s routes join its document')
    nameSwaggerComponents(app)
    return
  }
  assertBeforeRoutes(app, 'plinth-docs', '@fastify/swagger documents only the routes added after it')
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title, description, version },
      ...(servers ? { servers } : {})
    },
    // Shared schemas keep their `$id` as component name: `#/components/schemas/Problem`, not `def-0`.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`)
    }
  })
  app.addHook('onRoute', function docsRoutes (route) {
    if (route.url === `${DOCS_PREFIX}/json`) route.handler = openapiDocument(app)
    if (route.url === `${DOCS_PREFIX}/static/*`) route.onSend = [...[route.onSend ?? []].flat(), cachedForAWeek]
  })
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: {
      persistAuthorization: true,
      docExpansion: 'list',
      // The default posts the document to an online validator; this service makes no outside calls.
      validatorUrl: null
    }
  })
}

export default fp(docsPlugin, { name: 'plinth-docs', fastify: '5.x' })
