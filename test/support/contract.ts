import { createHash } from 'node:crypto'
import { Ajv2019, type ValidateFunction } from 'ajv/dist/2019.js'
import addFormats from 'ajv-formats'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'

// The OpenAPI document is the contract: every answer a test gets from app.inject must be one the
// document lists for its operation and status, with a body its schema accepts.

interface Operation { operationId?: string, responses?: Record<string, { content?: Record<string, { schema?: object }> }> }
interface Document { paths: Record<string, Record<string, Operation>>, components?: object }

const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: true })
addFormats.default(ajv)
const validators = new Map<string, ValidateFunction>()

/** The document's path templates, literal segments before parameters, so /users/me wins over /users/{user_id}. */
function matcher (doc: Document) {
  const templates = Object.keys(doc.paths)
    .map((path) => ({ path, params: (path.match(/\{/g) ?? []).length, pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }))
    .sort((a, b) => a.params - b.params)
  return (url: string) => templates.find((template) => template.pattern.test(url))?.path
}

/** What is wrong with this answer under the document, or undefined. */
function violation (doc: Document, docKey: string, match: (url: string) => string | undefined, method: string, url: string, res: LightMyRequestResponse) {
  // As the server sees the path: dot segments resolved (as a URL parser does) and, as Fastify ignores it, no trailing slash.
  const pathname = new URL(url, 'http://localhost').pathname
  const path = match(pathname.length > 1 ? pathname.replace(/\/$/, '') : pathname)
  // Routes the document does not describe (Swagger UI's files, hidden routes, 404s of unknown URLs) are not under contract.
  if (path === undefined) return undefined
  const operation = doc.paths[path]?.[method.toLowerCase()]
  // Every plinth operation has an operationId; a route a test adds for itself has none.
  if (operation?.operationId === undefined) return undefined
  const documented = operation.responses?.[String(res.statusCode)] ?? operation.responses?.default
  if (documented === undefined) return `${method} ${path} answered ${res.statusCode}, which its document does not list (${Object.keys(operation.responses ?? {}).join(', ')})`
  const type = String(res.headers['content-type'] ?? '').split(';')[0]!
  if (!documented.content) return res.payload === '' ? undefined : `${method} ${path} ${res.statusCode} has a body where the document lists none`
  const content = documented.content[type]
  if (content === undefined) return `${method} ${path} ${res.statusCode} is ${type || 'untyped'}; the document lists ${Object.keys(documented.content).join(', ')}`
  if (!content.schema) return undefined
  const key = `${docKey} ${method} ${path} ${res.statusCode} ${type}`
  let validate = validators.get(key)
  if (!validate) validators.set(key, validate = ajv.compile({ ...content.schema, components: doc.components }))
  let body: unknown
  try {
    body = JSON.parse(res.payload)
  } catch {
    return `${method} ${path} ${res.statusCode} is not JSON`
  }
  if (validate(body)) return undefined
  return `${method} ${path} ${res.statusCode} does not match its documented schema: ${ajv.errorsText(validate.errors)}`
}

/**
 * Checks every answer of `app.inject` against the app's OpenAPI document: an undocumented status,
 * content type or body rejects the inject, so the test that sent it fails.
 */
export function enforceContract (app: FastifyInstance) {
  const inject = app.inject.bind(app)
  let contract: Promise<{ doc: Document, key: string, match: (url: string) => string | undefined } | undefined> | undefined
  // What /docs/json serves, read without a request: tests that watch every answer or log line see none more.
  const load = async () => {
    await app.ready()
    const swagger = (app as { swagger?: () => Document }).swagger
    if (swagger === undefined) return undefined
    const doc = swagger()
    return { doc, key: createHash('sha256').update(JSON.stringify(doc)).digest('hex'), match: matcher(doc) }
  }
  app.inject = (async (options: InjectOptions | string) => {
    const res = await inject(options as InjectOptions)
    const { method = 'GET', url = '/' } = typeof options === 'string' ? { url: options } : options as { method?: string, url?: string }
    const loaded = await (contract ??= load())
    const problem = loaded && violation(loaded.doc, loaded.key, loaded.match, method, String(url), res)
    if (problem) throw new Error(`contract: ${problem}\n${res.payload.slice(0, 500)}`)
    return res
  }) as typeof app.inject
}
