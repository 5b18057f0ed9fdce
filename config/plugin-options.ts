import type { TObject, TSchema } from '@sinclair/typebox'
import type { Config } from '../config.js'
import { VARIABLES } from '../config.js'
import { AuthOptionsSchema, type AuthOptions } from '../plugins/auth/options.js'
import { CorsOptionsSchema, type CorsOptions } from '../plugins/cors.js'
import type { EtagsOptions } from '../plugins/etags.js'
import { OverloadOptionsSchema, type OverloadOptions } from '../plugins/overload.js'
import { WellKnownOptionsSchema, type WellKnownOptions } from '../plugins/well-known.js'
import { AccountsOptionsSchema, type AccountsOptions } from '../routes/accounts/options.js'
import { CatalogOptionsSchema, type CatalogOptions } from '../routes/catalog/options.js'
import { ResourceOptionsSchema, type ResourceOptions } from '../routes/resources/index.js'
import type { SettingFiles } from './files.js'

/** The plugins the variables set options of, by the name optionsOf gives their options. */
export const PLUGIN_SCHEMAS = {
  auth: AuthOptionsSchema,
  cors: CorsOptionsSchema,
  overload: OverloadOptionsSchema,
  wellKnown: WellKnownOptionsSchema,
  accounts: AccountsOptionsSchema,
  catalog: CatalogOptionsSchema,
  resources: ResourceOptionsSchema
}

export interface PluginOptions {
  auth: AuthOptions
  cors: CorsOptions
  overload: OverloadOptions
  wellKnown: WellKnownOptions
  accounts: AccountsOptions
  catalog: CatalogOptions
  /** Those of every resource mounted, RESOURCES' and RESOURCES_FILE's. */
  resources: Partial<ResourceOptions>
  etags: EtagsOptions
  db: { migrate: boolean }
}

function * optionsIn (schema: TObject, path: string[]): Generator<[TSchema, string[]]> {
  for (const [key, property] of Object.entries(schema.properties)) {
    yield [property, [...path, key]]
    if (property.type === 'object' && property.properties) yield * optionsIn(property as TObject, [...path, key])
  }
}

const places = new Map<TSchema, string[][]>()
for (const [plugin, schema] of Object.entries(PLUGIN_SCHEMAS)) {
  for (const [property, path] of optionsIn(schema, [plugin])) places.set(property, [...(places.get(property) ?? []), path])
}

/** Where each variable's value goes: every place in the plugins' schemas of the options it names. */
export const TARGETS = Object.fromEntries(Object.entries(VARIABLES).map(([name, { options }]) => {
  const paths = options.flatMap((schema) => places.get(schema) ?? [])
  if (paths.length < options.length) throw new Error(`${name}: an option it names is in no plugin's schema`)
  return [name, paths]
})) as Record<keyof Config, string[][]>

function put (target: Record<string, unknown>, [key, ...rest]: string[], value: unknown) {
  if (rest.length === 0) target[key!] = value
  else put((target[key!] ??= {}) as Record<string, unknown>, rest, value)
}

function advertisedScopes (config: Config, files: SettingFiles): string[] {
  const guards = files.resources.flatMap(({ guards }) => [guards.read, guards.write])
  const named = guards.flatMap((guard) => typeof guard === 'object' && guard !== null ? guard.scopes : [])
  const settings = [config.CATALOG_WRITE_SCOPE, config.RECORDS_WRITE_SCOPE].filter((scope) => scope !== undefined)
  return [...new Set(['me', ...settings, ...named])]
}

export function optionsOf (config: Config, files: SettingFiles): PluginOptions {
  const options: Record<string, unknown> = { auth: {}, cors: {}, overload: {}, wellKnown: {}, accounts: { mail: {}, rateLimits: {} }, catalog: {}, resources: {} }
  for (const [name, paths] of Object.entries(TARGETS)) {
    const value = config[name as keyof Config]
    const { scale } = VARIABLES[name as keyof Config]
    if (value !== undefined) for (const path of paths) put(options, path, typeof value === 'number' ? value * scale : value)
  }
  const { auth, overload, wellKnown, accounts } = options as unknown as PluginOptions
  const { FIRST_SUPERUSER_EMAIL: email, FIRST_SUPERUSER_PASSWORD: password } = config
  // What no one variable gives: a value from several settings, or from a file.
  auth.privateKey = files.privateKey
  overload.behindProxy = config.TRUST_PROXY !== false && config.TRUST_PROXY !== 0
  wellKnown.scopes = advertisedScopes(config, files)
  accounts.firstSuperuser = email && password ? { email, password } : undefined
  accounts.mail = { ...accounts.mail, appUrl: config.APP_URL ?? config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`, templates: files.templates }
  return {
    ...options as unknown as PluginOptions,
    // Keyed by what every process of the deployment already shares, so their ETags agree.
    etags: { secret: config.SECRET_KEY ?? files.privateKey },
    db: { migrate: config.CREATE_TABLES_ON_STARTUP }
  }
}
