import type { TObject } from '@sinclair/typebox'
import type { ResourceRow } from '../../schemas/fields.js'
import type { ResourceHooks } from './hooks.js'
import type { ResourceOptions } from './options.js'

/** A resource's options as a TypeBox object of fields types them: its hooks get `ResourceRow<typeof fields>`. */
export type TypedResourceOptions<Fields extends TObject> = Omit<ResourceOptions, 'fields' | 'hooks'> & {
  fields: Fields
  hooks?: ResourceHooks<ResourceRow<Fields>>
  /** As app.register takes it. */
  prefix?: string
}

/**
 * resourcePlugin's options, with hooks typed by the fields.
 * @example
 * await app.register(resourcePlugin, defineResource({ prefix: '/api/v1', name: 'tasks', fields: Task, hooks: { beforeCreate: (data) => ({ ...data, title: data.title?.trim() }) } }))
 */
export function defineResource<Fields extends TObject> (options: TypedResourceOptions<Fields>): ResourceOptions & { prefix?: string } {
  return options as ResourceOptions & { prefix?: string }
}
