import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static, TObject } from '@sinclair/typebox'
import type { PgColumn, PgTableWithColumns } from 'drizzle-orm/pg-core'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { buildResourceTable } from '../../db/resource-table.js'
import changes from '../../plugins/changes.js'
import { documentRoutes } from '../../plugins/docs.js'
import { trailingSlashAliases } from '../../http/trailing-slash.js'
import { jsonBodiesOnly, validatorCompiler } from '../../http/validation.js'
import { addSchemas } from '../../schemas/common.js'
import { ProblemSchema, ValidationProblemSchema } from '../../schemas/error.js'
import { resourceErrorHandler } from './constraints.js'
import { ResourceNotRegistered } from './errors.js'
import { presetOf } from './presets.js'
import { registerResource } from './registry.js'
import { resourceRoutes } from './routes.js'
import { resolveResourceOptions, type ResolvedResourceOptions, type ResourceOptions } from './options.js'

/** A resource's Drizzle table: its columns by name, the server's (`id`, `created_at`, ...) and one per field. */
export type ResourceTable<Column extends string = string> =
  PgTableWithColumns<{ name: string, schema: undefined, columns: Record<Column, PgColumn>, dialect: 'pg' }>

type ServerColumn = 'id' | 'created_at' | 'updated_at' | 'owner_id'

/** The columns of a resource of these fields (a TypeBox object, or their names), or any name when not given. */
type ColumnsOf<Fields> = Fields extends TObject ? ServerColumn | (keyof Static<Fields> & string) : Fields extends string ? ServerColumn | Fields : string

declare module 'fastify' {
  interface FastifyInstance {
    /** The Drizzle table of each resource registered on this app or a parent, by name: read it with resourceTable. */
    plinthResources: Map<string, ResourceTable>
  }
}

function tableOf ({ table, owner, ...opts }: ResolvedResourceOptions): ResourceTable {
  const { fields, preset } = presetOf(opts.fields)
  return buildResourceTable(table, fields, { owner, timestamps: preset.timestamps }) as unknown as ResourceTable
}

/** The Drizzle table of resource `name`, for host queries: `db.select().from(resourceTable<typeof Task>(app, 'tasks'))`. */
export function resourceTable<Fields extends TObject | string | undefined = undefined> (app: FastifyInstance, name: string): ResourceTable<ColumnsOf<Fields>> {
  const table = app.hasDecorator('plinthResources') ? app.plinthResources.get(name) : undefined
  if (table === undefined) throw new ResourceNotRegistered(name, name)
  // The fields' type is the caller's word for the columns, as Drizzle's own tables are typed.
  return table as unknown as ResourceTable<ColumnsOf<Fields>>
}

const resource: FastifyPluginAsyncTypebox<ResolvedResourceOptions> = async (app, opts) => {
  app.setValidatorCompiler(validatorCompiler)
  jsonBodiesOnly(app)
  // On its own in a host app, the resource still answers errors as problem documents, 422 included.
  app.setErrorHandler(resourceErrorHandler(app, opts))
  addSchemas(app, [ProblemSchema, ValidationProblemSchema])
  documentRoutes(app)
  trailingSlashAliases(app)
  await resourceRoutes(app, opts)
}

/** A resource, registered once per resource after the db plugin: `{ prefix: '/api/v1', name: 'notes' }` serves `/api/v1/notes` as `plinth-resource:notes`. */
const resourcePlugin: FastifyPluginAsyncTypebox<ResourceOptions> = async (app, opts) => {
  const options = resolveResourceOptions(opts)
  // This wrapper is not encapsulated, so Fastify ignores its prefix: it is handed on, plus the name.
  const { prefix = '' } = opts as { prefix?: string }
  registerResource(app, options)
  // One change feed for every resource, unless the host registered it already (with its own options).
  if (options.routes.events && opts.fields !== undefined && !app.hasPlugin('plinth-changes')) await app.register(changes)
  const plugin = fp<ResolvedResourceOptions>((instance, resolved) => resource(instance, resolved), {
    name: `plinth-resource:${options.name}`, fastify: '5.x', dependencies: ['plinth-db'], encapsulate: true
  })
  await app.register(plugin, { ...options, prefix: `${prefix.replace(/\/+$/, '')}/${options.name}` })
  if (!app.hasDecorator('plinthResources')) app.decorate('plinthResources', new Map())
  app.plinthResources.set(options.name, tableOf(options))
}

export default fp(resourcePlugin, { name: 'plinth-resource', fastify: '5.x' })
export { ROUTE_NAMES, ResourceOptionsSchema, type ResourceOptions, type RouteName } from './options.js'
export { RecordNotFound, ResourceNotRegistered } from './errors.js'
