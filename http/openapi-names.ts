import { createRequire } from 'node:module'
import type { FastifyInstance } from 'fastify'

const LOCAL = '#/components/schemas/'
// @fastify/swagger's default resolver names each shared schema def-N, and sets its title to its $id.
const UNNAMED = /^def-\d+$/
const NAME = /^[\w.-]+$/

type Schemas = Record<string, { title?: unknown }>
interface Document { components?: { schemas?: Schemas } }

function renameReferences (node: unknown, names: Map<string, string>) {
  if (typeof node !== 'object' || node === null) return
  const { $ref } = node as { $ref?: unknown }
  if (typeof $ref === 'string' && $ref.startsWith(LOCAL)) {
    const [name = '', ...rest] = $ref.slice(LOCAL.length).split('/')
    const renamed = names.get(name)
    if (renamed !== undefined) (node as { $ref: string }).$ref = LOCAL + [renamed, ...rest].join('/')
  }
  for (const value of Object.values(node)) renameReferences(value, names)
}

const named = new WeakSet<object>()

/** Renames, in place, each `def-N` component to its title (its `$id`), as plinth's own document names it, with every reference to it. */
export function nameComponents<T extends Document> (document: T): T {
  const schemas = document.components?.schemas
  if (schemas === undefined || named.has(document)) return document
  named.add(document)
  const taken = new Set(Object.keys(schemas))
  const names = new Map<string, string>()
  for (const [name, { title }] of Object.entries(schemas)) {
    if (!UNNAMED.test(name) || typeof title !== 'string' || !NAME.test(title) || taken.has(title)) continue
    names.set(name, title)
    taken.add(title)
  }
  if (names.size === 0) return document
  document.components!.schemas = Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [names.get(name) ?? name, schema]))
  renameReferences(document, names)
  return document
}

/** YAML as @fastify/swagger writes it, with the `yaml` it depends on. */
function toYaml (document: object): string {
  const swaggerPath = createRequire(import.meta.url).resolve('@fastify/swagger')
  const { stringify } = createRequire(swaggerPath)('yaml') as { stringify: (value: unknown, options: object) => string }
  return stringify(document, { strict: false })
}

/** Makes a host's own `app.swagger()` answer with named components, as JSON or YAML; the host's routes see it through their contexts. */
export function nameSwaggerComponents (app: FastifyInstance) {
  const swagger = app.swagger as (options?: { yaml?: boolean }) => object
  const namedSwagger = function namedSwagger (this: FastifyInstance, options?: { yaml?: boolean }) {
    const document = nameComponents(swagger.call(this) as Document)
    return options?.yaml === true ? toYaml(document) : document
  }
  app.swagger = namedSwagger as FastifyInstance['swagger']
}
