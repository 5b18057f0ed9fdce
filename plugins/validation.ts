import type { Options } from 'ajv'
import { Ajv2019 } from 'ajv/dist/2019.js'
import addFormats from 'ajv-formats'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type {
  FastifyBaseLogger, FastifyInstance, FastifySchemaCompiler, FastifySchemaValidationError,
  RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault
} from 'fastify'

// Fastify's defaults, minus one: a JSON body is never coerced ("price": "5" is refused, not read as 5),
// while query strings and path parameters, which are text by nature, are. Verbose errors carry
// the refused value, so a message can say which character of a text was the problem.
// Start-up time (PGlite start to healthy, bench/): the schemas are not checked against the JSON
// Schema meta-schema, whose compilation took 250 ms of every boot. They are TypeBox's output, and
// test/openapi.test.ts validates every one of them within the OpenAPI document. Ajv's code
// optimisation passes are off too: they cost compile time for no measured gain here.
const common: Options = { useDefaults: true, removeAdditional: true, allErrors: false, verbose: true, code: { optimize: false }, validateSchema: false }

function ajv (options: Options) {
  // Draft 2019-09 rather than Fastify's draft-07: it knows dependentRequired, as OpenAPI 3.1 does.
  const instance = new Ajv2019({ ...common, ...options })
  addFormats.default(instance)
  return instance
}

type Validate = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null }

/**
 * Ajv's compile, once per distinct schema. Fastify hands each route a copy of its schemas, which
 * defeats Ajv's own cache (by object): 28 compiles of 15 distinct schemas, 10 ms each, were a
 * fifth of the start-up time.
 */
function compiler (options: Options) {
  const instance = ajv(options)
  const compiled = new Map<string, Validate>()
  return (schema: object) => {
    const key = JSON.stringify(schema)
    let validate = compiled.get(key)
    if (!validate) compiled.set(key, validate = instance.compile(schema) as Validate)
    return validate
  }
}

const compileBody = compiler({ coerceTypes: false })
const compileText = compiler({ coerceTypes: 'array' })

/**
 * Ajv coerces "1e400" or "Infinity" in a query string or path to Infinity, which passes `integer`,
 * `minimum` and `maximum` alike; refused here as the non-integer it is, so it never reaches SQL.
 */
function finiteNumbersOnly (validate: Validate): Validate {
  const check: Validate = (data) => {
    if (!validate(data)) {
      check.errors = validate.errors
      return false
    }
    const values = (data ?? {}) as Record<string, unknown>
    const key = Object.keys(values).find((name) => typeof values[name] === 'number' && !Number.isFinite(values[name]))
    if (key === undefined) return true
    check.errors = [{ keyword: 'type', instancePath: `/${key}`, schemaPath: `#/properties/${key}/type`, params: { type: 'integer' }, message: 'must be integer' }]
    return false
  }
  return check
}

/**
 * The validator compiler of every route in this package. Each profile sets it on its own
 * encapsulated context, so its input contract holds in any host app.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  httpPart === 'body'
    ? compileBody(schema as object)
    : finiteNumbersOnly(compileText(schema as object))

/** A Fastify instance whose route schemas type the handlers (what every route module receives). */
export type TypeBoxInstance = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>
