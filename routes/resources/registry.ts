import type { FastifyInstance } from 'fastify'
import type { Guard } from '../../http/types.js'
import type { Field } from '../../schemas/fields.js'
import type { ResolvedResourceOptions } from './options.js'
import { presetOf } from './presets.js'

/** What other resources need to know of one: to reference its rows, embed them, and read them as its own routes would. */
export interface RegisteredResource {
  name: string
  /** The SQL table. */
  table: string
  fields: Field[]
  owner: boolean
  timestamps: boolean
  /** The hook that guards its reads (in owner mode, authentication at least); none when public. */
  read?: Guard
  /** How other resources may embed its rows. */
  embedding: Embedding
}

/** What an embed of a resource's rows follows: its page limits, its routes, and its row schema's id. */
export interface Embedding {
  defaultLimit: number
  maxLimit: number
  /** Forward embeds read one row by id, as its GET does; reverse embeds a list, as its filtered list does. */
  get: boolean
  list: boolean
  rowId: string
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every resource registered on this app or a parent, by name, as other resources see it. */
    plinthResourceRegistry: Map<string, RegisteredResource>
  }
}

/** Records a resource on `app` (the resources' common parent), before its routes, so it may reference itself. */
export function registerResource (app: FastifyInstance, opts: ResolvedResourceOptions): RegisteredResource {
  if (!app.hasDecorator('plinthResourceRegistry')) app.decorate('plinthResourceRegistry', new Map())
  const { fields, preset } = presetOf(opts.fields)
  const read = opts.guards.read ?? (opts.owner && app.hasDecorator('plinthGuards') ? app.plinthGuards.authenticate : undefined)
  const embedding: Embedding = {
    defaultLimit: opts.defaultLimit,
    maxLimit: opts.maxLimit,
    get: opts.routes.get,
    list: opts.routes.list && preset.list === 'filtered',
    rowId: preset.rowSchema(opts.name, fields, opts.owner).$id!
  }
  const resource: RegisteredResource = { name: opts.name, table: opts.table, fields, owner: opts.owner, timestamps: preset.timestamps, embedding, ...(read ? { read } : {}) }
  app.plinthResourceRegistry.set(opts.name, resource)
  return resource
}

/** The resource `name` as registered on this app or a parent, if it is. */
export const registeredResource = (app: FastifyInstance, name: string): RegisteredResource | undefined =>
  app.hasDecorator('plinthResourceRegistry') ? app.plinthResourceRegistry.get(name) : undefined
