import { existsSync, readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { Guard } from '../http/types.js'
import type { Guards } from '../http/options.js'
import type { App } from '../http/types.js'
import type { JsonSchema } from '../schemas/fields.js'
import { InvalidResourceOptions } from '../routes/resources/errors.js'
import type { ResourceHooks } from '../routes/resources/hooks.js'
import { IDENTIFIER, resolveResourceOptions, type ResourceOptions } from '../routes/resources/options.js'

/** Who may call a route, in JSON: anyone, any signed-in user, a superuser, or a user with every one of these scopes. */
const GuardWords = Type.Union([
  Type.Literal('public'),
  Type.Literal('authenticated'),
  Type.Literal('superuser'),
  Type.Object({ scopes: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9:_.-]{0,63}$' }), { minItems: 1 }) }, { additionalProperties: false })
])

const FileResource = Type.Object({
  fields: Type.Object({}, { additionalProperties: true, description: 'A JSON Schema object: { "type": "object", "properties": {...}, "required": [...] }' }),
  owner: Type.Optional(Type.Boolean()),
  indexes: Type.Optional(Type.Array(Type.String())),
  unique: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Array(Type.String()), Type.Object({}, { additionalProperties: true })]))),
  search: Type.Optional(Type.Array(Type.String())),
  maxEmbedRows: Type.Optional(Type.Integer()),
  maxBatch: Type.Optional(Type.Integer()),
  eventHeartbeatSeconds: Type.Optional(Type.Number()),
  eventBufferBytes: Type.Optional(Type.Integer()),
  hooks: Type.Optional(Type.String({ minLength: 1, description: 'A module whose default export is the hooks object, relative to this file' })),
  guards: Type.Optional(Type.Object({ read: Type.Optional(GuardWords), write: Type.Optional(GuardWords) }, { additionalProperties: false })),
  table: Type.Optional(Type.String()),
  defaultLimit: Type.Optional(Type.Integer()),
  maxLimit: Type.Optional(Type.Integer()),
  routes: Type.Optional(Type.Record(Type.String(), Type.Boolean()))
}, { additionalProperties: false })

/** RESOURCES_FILE: resources by name, each with its fields in plain JSON Schema. */
export const ResourcesFileSchema = Type.Record(Type.String(), FileResource)

type GuardSpec = Static<typeof GuardWords>

export interface FileResourceDefinition {
  /** resourcePlugin's options, checked: all but the guards, which need the app. */
  options: ResourceOptions
  guards: { read?: GuardSpec, write?: GuardSpec }
  /** The absolute path of the module of its hooks, loaded by loadResourceHooks. */
  hooksModule?: string
}

/** Reads and checks a resources file; all problems are thrown together, one line each, so one start shows them all. */
export function readResourcesFile (path: string, fail: (message: string) => Error = (message) => new InvalidResourceOptions(message)): FileResourceDefinition[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
  } catch (err) {
    throw fail(`RESOURCES_FILE ${path}: ${(err as Error).message}`)
  }
  const problems: string[] = []
  const definitions: FileResourceDefinition[] = []
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw fail(`RESOURCES_FILE ${path}: must be a JSON object of resources by name, such as { "tasks": { "fields": { ... } } }`)
  }
  for (const [name, resource] of Object.entries(parsed)) {
    const error = Value.Errors(FileResource, resource).First()
    if (!IDENTIFIER.test(name)) {
      problems.push(`${name}: a resource name is a lower-case identifier: a letter, then letters, digits or _, at most 63 characters`)
    } else if (error !== undefined) {
      problems.push(`${name}${error.path.replaceAll('/', '.')}: ${error.message.toLowerCase()}`)
    } else {
      const { guards = {}, fields, hooks, ...rest } = resource as Static<typeof FileResource>
      const options = { name, fields: fields as JsonSchema, ...rest } as ResourceOptions
      const hooksModule = hooks === undefined ? undefined : resolve(dirname(path), hooks)
      try {
        resolveResourceOptions(options)
        if (hooksModule !== undefined && !existsSync(hooksModule)) throw new Error(`${name}.hooks: no module at ${hooksModule}`)
        definitions.push({ options, guards, ...(hooksModule === undefined ? {} : { hooksModule }) })
      } catch (err) {
        problems.push((err as Error).message.replace(/^resource plugin: ("[^"]+": )?/, `${name}: `))
      }
    }
  }
  if (problems.length > 0) throw fail(problems.map((problem) => `RESOURCES_FILE ${path}: ${problem}`).join('\n'))
  return definitions
}

/** The hook a guard word stands for; undefined without authPlugin, which resourcePlugin refuses as a missing guard. */
function guardOf (app: App, spec: Exclude<GuardSpec, 'public'>): Guard | undefined {
  if (!app.hasDecorator('plinthGuards')) return undefined
  if (spec === 'authenticated') return app.plinthGuards.authenticate
  if (spec === 'superuser') return app.plinthGuards.requireSuperuser
  return app.plinthGuards.requireScopes(...spec.scopes)
}

/** The guard hooks a definition's words stand for; a word with no hook stays undefined, so the boot fails naming it. */
export function guardsOf (app: App, { guards }: FileResourceDefinition): Guards {
  const named = Object.entries(guards).filter((entry): entry is [string, Exclude<GuardSpec, 'public'>] => entry[1] !== 'public')
  return Object.fromEntries(named.map(([route, spec]) => [route, guardOf(app, spec)]))
}

/** The hooks of a definition, from its module's default export; a module that cannot be loaded, or exports no hooks object, stops the boot. */
export async function loadResourceHooks ({ options, hooksModule }: FileResourceDefinition, fail: (message: string) => Error = (message) => new InvalidResourceOptions(message)): Promise<{ hooks?: ResourceHooks }> {
  if (hooksModule === undefined) return {}
  let hooks: unknown
  try {
    hooks = ((await import(pathToFileURL(hooksModule).href)) as { default?: unknown }).default
  } catch (err) {
    throw fail(`RESOURCES_FILE: ${options.name}.hooks: ${hooksModule} cannot be loaded: ${(err as Error).message}`)
  }
  if (typeof hooks !== 'object' || hooks === null) throw fail(`RESOURCES_FILE: ${options.name}.hooks: ${hooksModule} must export default an object such as { beforeCreate }`)
  try {
    resolveResourceOptions({ ...options, hooks: hooks as ResourceHooks })
  } catch (err) {
    throw fail(`RESOURCES_FILE: ${options.name}.hooks: ${hooksModule}: ${(err as Error).message.replace(/^resource plugin: "[^"]+": /, '')}`)
  }
  return { hooks: hooks as ResourceHooks }
}
