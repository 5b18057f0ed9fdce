import { Ajv, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

// Fastify's defaults, minus one: a JSON body is never coerced ("price": "5" is refused, not read as 5),
// while query strings and path parameters, which are text by nature, are.
const common: Options = { useDefaults: true, removeAdditional: true, allErrors: false }

function ajv (options: Options) {
  const instance = new Ajv({ ...common, ...options })
  addFormats.default(instance)
  return instance
}

const bodyAjv = ajv({ coerceTypes: false })
const textAjv = ajv({ coerceTypes: 'array' })

/**
 * The validator compiler of every route in this package. Each profile sets it on its own
 * encapsulated context, so its input contract holds in any host app.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object)
