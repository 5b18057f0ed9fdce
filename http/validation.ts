import type { Options } from 'ajv'
import { Ajv2019 } from 'ajv/dist/2019.js'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import { jsonbKeyword, storableFormats } from '../schemas/storable.js'

// A JSON body is never coerced ("price": "5" is refused); query strings and paths, text by nature, are. No meta-schema
// check or code optimisation: the schemas are TypeBox output, and both cost start-up time.
const common: Options = { useDefaults: true, removeAdditional: true, allErrors: false, verbose: true, code: { optimize: false }, validateSchema: false }

function ajv (options: Options) {
  // Draft 2019-09 rather than Fastify's draft-07: it knows dependentRequired, as OpenAPI 3.1 does.
  const instance = new Ajv2019({ ...common, ...options })
  addFormats.default(instance)
  for (const [name, format] of Object.entries(storableFormats)) instance.addFormat(name, format)
  instance.addKeyword(jsonbKeyword)
  return instance
}

type Validate = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null }

/** Ajv's compile, once per distinct schema: Fastify hands each route a copy, which defeats Ajv's cache (by object) and slows start-up. */
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

/** "1e400" or "Infinity" in a query or path coerces to Infinity, which passes integer bounds: refused here, before SQL. */
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

const passes: Validate = () => true

/** Node gives each request header as text: a headers schema of optional, unconstrained strings only documents them, and cannot fail. */
function documentsOnly (schema: { type?: unknown, required?: unknown[], properties?: Record<string, object> }): boolean {
  return schema.type === 'object' && !schema.required?.length &&
    Object.values(schema.properties ?? {}).every((property) => Object.keys(property).every((key) => key === 'type' || key === 'description') &&
      (property as { type?: unknown }).type === 'string')
}

/** Each profile sets this on its own context, so its input contract holds in any host app. */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return compileBody(schema as object)
  if (httpPart === 'headers' && documentsOnly(schema as object)) return passes
  return finiteNumbersOnly(compileText(schema as object))
}

// What an HTML form sends: a page on any site can post these cross-site without a CORS preflight.
export const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']

/** JSON bodies only in this (encapsulated) context, whatever parsers the host has: a form is Fastify's 415. */
export function jsonBodiesOnly (app: FastifyInstance) {
  for (const type of FORM_TYPES) if (app.hasContentTypeParser(type)) app.removeContentTypeParser(type)
}
