import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export interface DocsOptions {
  /** Where the OAuth2 password flow posts the login form. */
  tokenUrl?: string
  /** Scopes offered by the Authorize dialog. */
  scopes?: Record<string, string>
}

/** Where Swagger UI and the OpenAPI document are served: the service's only HTML. */
export const DOCS_PREFIX = '/docs'

type ObjectSchema = { properties?: Record<string, { default?: unknown }>, required?: string[] }

/**
 * A query parameter with a default may be left out: Ajv fills it in before `required` is checked,
 * so the document must not call it required (generated clients would insist on it). A copy: the
 * route keeps its own schema for validation.
 */
function optionalDefaults (querystring: unknown) {
  const { properties, required } = (querystring ?? {}) as ObjectSchema
  if (!properties || !required) return querystring
  return { ...(querystring as object), required: required.filter((name) => properties[name]?.default === undefined) }
}

/**
 * The OpenAPI 3.1 document, generated from the route schemas, and Swagger UI at /docs whose
 * Authorize button logs in through the password flow.
 */
async function docsPlugin (app: FastifyInstance, opts: DocsOptions) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'plinth',
        description: 'Accounts and sessions, an item catalog and generic resources, under /api/v1.',
        version: '0.1.0'
      },
      components: {
        securitySchemes: {
          OAuth2PasswordBearer: {
            type: 'oauth2',
            flows: {
              password: {
                tokenUrl: opts.tokenUrl ?? '/api/v1/auth/login',
                scopes: opts.scopes ?? { me: 'Read your own profile and scopes' }
              }
            }
          }
        }
      }
    },
    transform: ({ schema, url }) => ({ url, schema: schema && { ...schema, querystring: optionalDefaults(schema.querystring) } }),
    // Shared schemas keep their `$id` as component name: `#/components/schemas/Problem`, not `def-0`.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`)
    }
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

export default fp(docsPlugin, { name: 'docs', fastify: '5.x' })
