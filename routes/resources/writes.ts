import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Database } from '../../db/client.js'
import { foreignKeyOf, presentIds, type Repository, type Versioned } from '../../db/crud.js'
import { validationError, withoutValues } from '../../http/problems.js'
import type { Guard } from '../../http/types.js'
import type { PlinthAccount } from '../../plugins/auth/index.js'
import type { Field } from '../../schemas/fields.js'
import { passesGuard } from './guard-runs.js'
import type { HookContext, ResourceHooks } from './hooks.js'
import { registeredResource, type RegisteredResource } from './registry.js'

/** A stored row as the routes read it: its JSON as the API sends it, and the id and owner they check. */
export interface StoredRow { id: number, owner_id?: number, json: string }

type Values = Record<string, unknown>
/** The account a writer reads a referenced resource with; false where its read guard refuses the writer. */
type Reader = { account: PlinthAccount | null } | false
type Readers = Map<RegisteredResource, Reader>
type Stored = Versioned<StoredRow>

export interface WritePathOptions {
  app: FastifyInstance
  db: Database
  /** The resource's name, as hooks and logs are told it. */
  name: string
  /** Its SQL table. */
  table: string
  rows: Repository<StoredRow, Values>
  fields: Field[]
  hooks: ResourceHooks
  /** The guard of its write routes, which has run on every write: a target read under the same guard is not asked again. */
  writeGuard?: Guard
}

/** The resource's writes: with a before* hook, in a transaction the hook shares; references checked against what the writer may read. */
export function resourceWrites ({ app, db, name, table, rows, fields, hooks, writeGuard }: WritePathOptions) {
  const references = fields.filter((field) => field.references !== undefined)
  const contextOf = (request: FastifyRequest): HookContext => ({ request, account: request.account ?? null, resource: name })
  const rowOf = (stored: Stored) => JSON.parse(stored.json) as Values

  /** An after* hook: the write is committed, so its error is only logged. */
  async function after (request: FastifyRequest, hook: string, run: (() => unknown) | undefined) {
    if (run === undefined) return
    try {
      await run()
    } catch (err) {
      request.log.error({ err: withoutValues(err), resource: name, hook }, 'a resource hook failed after its write was committed; the write stands')
    }
  }

  /**
   * For each resource the values reference, the account its read guard lets the writer read it with, as a GET of it
   * would, or false where the guard refuses. Asked before any transaction: a guard reads on a connection of its own.
   */
  async function readersOf (request: FastifyRequest, reply: FastifyReply, values: Values[]): Promise<Readers> {
    const readers: Readers = new Map()
    const asked = new Map<Guard, Reader>()
    for (const field of references) {
      const target = registeredResource(app, field.references!.resource)
      if (target === undefined || readers.has(target) || !values.some((row) => typeof row[field.name] === 'number')) continue
      const guard = target.read
      if (guard === undefined || guard === writeGuard) {
        readers.set(target, { account: request.account ?? null })
        continue
      }
      if (!asked.has(guard)) asked.set(guard, await passesGuard(app, guard, request, reply))
      readers.set(target, asked.get(guard)!)
    }
    return readers
  }

  /**
   * Refuses references to rows the writer may not read (the target's read guard refuses, or another owner's row) exactly
   * as a foreign key refuses a missing row; with `each` (a bulk create), missing rows too, so that the 422 names each row.
   * One query per reference field; in a transaction the rows found stay until it ends.
   */
  async function checkReferences (values: Values[], readers: Readers, { tx, each = false }: { tx?: Database, each?: boolean }) {
    const refused: Array<{ index: number, field: Field }> = []
    for (const field of references) {
      const target = registeredResource(app, field.references!.resource)
      if (target === undefined) continue
      const ids = values.map((row) => row[field.name]).filter((id): id is number => typeof id === 'number')
      if (ids.length === 0) continue
      const reader = readers.get(target)!
      const account = reader === false ? null : reader.account
      const owned = target.owner && account?.is_superuser !== true
      if (reader !== false && !owned && !each) continue
      // Refused by the guard, or without an account in owner mode: no row is visible.
      const hidden = reader === false || (owned && account === null)
      const present = hidden ? new Set<number>() : await presentIds(tx ?? db, target.table, ids, { ownerId: owned ? account!.id : undefined, lock: tx !== undefined })
      values.forEach((row, index) => {
        const id = row[field.name]
        if (typeof id === 'number' && !present.has(id)) refused.push({ index, field })
      })
    }
    if (refused.length === 0) return
    const messages = new Map<Field, string>()
    for (const { field } of refused) {
      if (messages.has(field)) continue
      // The text of a foreign key's own refusal (http/problems.ts), so another owner's row reads as no row at all.
      const key = await foreignKeyOf(tx ?? db, table, field.name)
      const target = key?.references ?? registeredResource(app, field.references!.resource)!.table
      messages.set(field, `must match a row of ${target} (foreign key constraint${key ? ` "${key.constraint}"` : ''})`)
    }
    refused.sort((a, b) => a.index - b.index)
    throw validationError(Object.fromEntries(refused.map(({ index, field }) => [`/body${each ? `/${index}` : ''}/${field.name}`, messages.get(field)!])))
  }

  /** The values a beforeCreate hook returns, but for the owner, which is the writer's whatever the hook says. */
  function keepOwner (values: Values, data: Values | undefined | void): Values {
    if (data === undefined || data === null) return values
    return 'owner_id' in values ? { ...data, owner_id: values.owner_id } : data
  }

  async function createAll (request: FastifyRequest, reply: FastifyReply, list: Values[], each: boolean): Promise<Stored[]> {
    const context = contextOf(request)
    const readers = await readersOf(request, reply, list)
    const created = await db.transaction(async (tx) => {
      await checkReferences(list, readers, { tx, each })
      const data: Values[] = []
      for (const [index, values] of list.entries()) {
        data.push(hooks.beforeCreate ? keepOwner(values, await hooks.beforeCreate({ ...values }, { ...context, tx, index })) : values)
      }
      return rows.createMany(data, { tx })
    })
    for (const row of created) await after(request, 'afterCreate', hooks.afterCreate && (() => hooks.afterCreate!(rowOf(row), context)))
    return created
  }

  return {
    /** One row; without a beforeCreate hook, batched with the creates of the same event-loop turn. */
    async create (request: FastifyRequest, reply: FastifyReply, values: Values): Promise<Stored> {
      if (hooks.beforeCreate) return (await createAll(request, reply, [values], false))[0]!
      await checkReferences([values], await readersOf(request, reply, [values]), {})
      const row = await rows.create(values)
      await after(request, 'afterCreate', hooks.afterCreate && (() => hooks.afterCreate!(rowOf(row), contextOf(request))))
      return row
    },

    /** Every row or none, in one transaction, in order. */
    createMany: (request: FastifyRequest, reply: FastifyReply, list: Values[]) => createAll(request, reply, list, true),

    /** The row changed, or null when it is missing or its version is not one of `ifVersions`. */
    async update (request: FastifyRequest, reply: FastifyReply, id: number, values: Values, ifVersions?: string[]): Promise<Stored | null> {
      if (!hooks.beforeUpdate && !hooks.afterUpdate) {
        await checkReferences([values], await readersOf(request, reply, [values]), {})
        return rows.update(id, values, { ifVersions })
      }
      const context = contextOf(request)
      const readers = await readersOf(request, reply, [values])
      const written = await db.transaction(async (tx) => {
        const current = await rows.get(id, { tx, forUpdate: true })
        if (current === null || (ifVersions !== undefined && !ifVersions.includes(current.version))) return null
        await checkReferences([values], readers, { tx })
        const previous = rowOf(current)
        const change = hooks.beforeUpdate ? await hooks.beforeUpdate({ ...values }, { ...context, tx, current: previous }) ?? values : values
        const row = await rows.update(id, change, { tx })
        return row && { row, previous }
      })
      if (written === null) return null
      await after(request, 'afterUpdate', hooks.afterUpdate && (() => hooks.afterUpdate!(rowOf(written.row), { ...context, previous: written.previous })))
      return written.row
    },

    /** Whether the row was deleted: false when it is missing or its version is not one of `ifVersions`. */
    async remove (request: FastifyRequest, id: number, ifVersions?: string[]): Promise<boolean> {
      if (!hooks.beforeDelete && !hooks.afterDelete) return rows.delete(id, { ifVersions })
      const context = contextOf(request)
      const deleted = await db.transaction(async (tx) => {
        const current = await rows.get(id, { tx, forUpdate: true })
        if (current === null || (ifVersions !== undefined && !ifVersions.includes(current.version))) return null
        const row = rowOf(current)
        await hooks.beforeDelete?.(row, { ...context, tx })
        return await rows.delete(id, { tx }) ? row : null
      })
      if (deleted === null) return false
      await after(request, 'afterDelete', hooks.afterDelete && (() => hooks.afterDelete!(deleted, context)))
      return true
    }
  }
}
