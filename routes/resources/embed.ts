import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { embeddedJson, type Embed, type EmbeddedResource } from '../../db/resource-embed.js'
import type { RequestSelection } from '../../db/resource-lists.js'
import { notAuthenticated } from '../../plugins/auth/errors.js'
import type { Guard } from '../../http/types.js'
import type { Field } from '../../schemas/fields.js'
import { invalidInput } from './errors.js'
import { EMBED_PARAMETER, serverColumns, takeEmbedParameters } from './list-query.js'
import type { ResolvedResourceOptions } from './options.js'
import type { ResourcePreset } from './presets.js'
import { documentEmbeds, withEmbeds } from './embed-document.js'
import { embeddedList } from './embed-query.js'
import { runGuard } from './guard-runs.js'
import { registeredResource, type Embedding, type RegisteredResource } from './registry.js'

/** What a resource shows to others' embeds beyond its registration: its limits, its routes and its row's component. */
/** An embed a resource offers: the rows of `target` referencing or referenced through `column`. */
interface Available {
  name: string
  kind: 'one' | 'many'
  column: string
  target: RegisteredResource
  offer: Embedding
  resource: EmbeddedResource
}

/** Whether `guard` refused the request: plinth's guards answer the refusal themselves, and a reply being sent is not yet `sent`. */
async function refuses (app: FastifyInstance, guard: Guard, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  let refused = false
  const { send } = reply
  const own = Object.hasOwn(reply, 'send')
  reply.send = function sendRefusal (payload?: unknown) {
    refused = true
    return send.call(this, payload)
  }
  try {
    await runGuard(app, guard, request, reply)
  } finally {
    if (own) reply.send = send
    else delete (reply as { send?: unknown }).send
  }
  return refused
}

const baseName = (field: Field) => field.name.slice(0, -'_id'.length)

export interface ResourceEmbeds {
  /** preValidation: takes `embed` and `<embed>.<param>` out of the query, runs the embedded resources' read guards, and keeps the embeds. */
  take (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<unknown>
  /** The `json` column with the request's embeds for a list page of `limit` rows (one row without it), or undefined when it asks for none; a 422 past maxEmbedRows. */
  selectionOf (request: FastifyRequest, limit?: number): RequestSelection | undefined
}

/**
 * The embeds of a resource: `embed=project` puts the row its `project_id` references inline, and
 * `embed=tasks` the rows of tasks that reference it. Reverse embeds exist once the resources that
 * reference this one are registered, so they are resolved at ready, from the registry.
 */
export function resourceEmbeds<L extends object, G extends object> (app: FastifyInstance, opts: ResolvedResourceOptions, { fields, preset, schemas, ownGuard }: {
  fields: Field[], preset: ResourcePreset, schemas: { list: L, get: G }, ownGuard?: Guard
}): (ResourceEmbeds & { list: L, get: G }) | undefined {
  const self = registeredResource(app, opts.name)
  if (self === undefined) return undefined
  // The records preset offers none: its rows are served as before resources had fields.
  if (preset.list !== 'filtered') return undefined
  const taken = new Set([...serverColumns({ owner: opts.owner, timestamps: preset.timestamps }), ...fields].map((column) => column.name))
  const plans = new WeakMap<FastifyRequest, Embed[]>()
  let resolved: Map<string, Available> | undefined

  function availableEmbeds (): Map<string, Available> {
    if (resolved) return resolved
    const found = new Map<string, Available>()
    const add = (name: string, embed: Omit<Available, 'name' | 'offer' | 'resource'>) => {
      const offer = embed.target.embedding
      if (taken.has(name) || found.has(name)) return false
      const { table, fields: targetFields, owner, timestamps } = embed.target
      found.set(name, { ...embed, name, offer, resource: { table, fields: targetFields, owner, timestamps } })
      return true
    }
    for (const field of fields) {
      const target = field.references && registeredResource(app, field.references.resource)
      if (target?.embedding.get) add(baseName(field), { kind: 'one', column: field.name, target })
    }
    for (const target of app.hasDecorator('plinthResourceRegistry') ? app.plinthResourceRegistry.values() : []) {
      if (!target.embedding.list) continue
      const referencing = target.fields.filter((field) => field.references?.resource === opts.name)
      // Two references to this resource: each reverse embed names its field.
      for (const field of referencing) {
        const plain = referencing.length === 1 && add(target.name, { kind: 'many', column: field.name, target })
        if (!plain) add(`${target.name}_by_${baseName(field)}`, { kind: 'many', column: field.name, target })
      }
    }
    return (resolved = found)
  }

  async function take (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    const { names, prefixed } = takeEmbedParameters(request.query as Record<string, unknown>)
    if (names.length === 0 && prefixed.size === 0) return
    const available = availableEmbeds()
    const wanted = names.map((name) => {
      const embed = available.get(name)
      if (embed === undefined) {
        throw invalidInput('querystring', `/${EMBED_PARAMETER}`, available.size === 0
          ? `names "${name}", but ${opts.name} has no embeds`
          : `names "${name}", which is not an embed of ${opts.name}: embeds are ${[...available.keys()].join(', ')}`)
      }
      return embed
    })
    for (const [name, query] of prefixed) {
      const key = `/${name}.${Object.keys(query)[0]}`
      const embed = available.get(name)
      if (embed === undefined) throw invalidInput('querystring', key, `is not a parameter of ${opts.name}: ${name} is not one of its embeds`)
      if (!names.includes(name)) throw invalidInput('querystring', key, `shapes the embed ${name}, which ${EMBED_PARAMETER} does not ask for`)
      if (embed.kind === 'one') throw invalidInput('querystring', key, `is not a parameter: ${name} is one row, which takes none`)
    }
    // Each embedded resource's read guard, as its own routes run it; this route's own ran already.
    const guards = new Set(wanted.map((embed) => embed.target.read).filter((guard) => guard !== undefined && guard !== ownGuard))
    for (const guard of guards) {
      if (await refuses(this, guard!, request, reply)) return reply
    }
    plans.set(request, wanted.map((embed) => {
      const ownerId = embed.target.owner ? ownerOf(request) : undefined
      const base = { name: embed.name, resource: embed.resource, column: embed.column, ...(ownerId === undefined ? {} : { ownerId }) }
      return embed.kind === 'one' ? { kind: 'one', ...base } : { kind: 'many', ...base, ...embeddedList(embed, prefixed.get(embed.name) ?? {}) }
    }))
  }

  function selectionOf (request: FastifyRequest, limit?: number): RequestSelection | undefined {
    const embeds = plans.get(request)
    if (embeds === undefined || embeds.length === 0) return undefined
    checkBudget(opts.name, embeds, limit, opts.maxEmbedRows)
    return embeddedJson(opts.table, fields, { owner: opts.owner, timestamps: preset.timestamps }, embeds)
  }

  const routeSchemas = { list: withEmbeds(schemas.list), get: withEmbeds(schemas.get) }
  // The document is built after ready, once every resource that may embed or be embedded is known.
  app.addHook('onReady', async function documentTheEmbeds () {
    documentEmbeds(opts.name, [...availableEmbeds().values()].map((embed) => ({
      name: embed.name,
      kind: embed.kind,
      column: embed.column,
      of: embed.target.name,
      rowId: embed.offer.rowId,
      defaultLimit: embed.offer.defaultLimit,
      maxLimit: embed.offer.maxLimit,
      guarded: embed.target.read !== undefined && embed.target.read !== ownGuard
    })), opts.maxEmbedRows, routeSchemas)
  })

  return { take, selectionOf, ...routeSchemas }
}

/**
 * The most rows the embeds may put in one answer, from the request alone, before any query: each page row embeds one
 * row per single-row embed and up to its limit per list (embeds do not nest). Past `budget`, a 422 naming the parameters.
 */
function checkBudget (name: string, embeds: Embed[], limit: number | undefined, budget: number): void {
  const pageRows = limit ?? 1
  const perRow = embeds.reduce((sum, embed) => sum + (embed.kind === 'one' ? 1 : embed.limit), 0)
  if (pageRows * perRow <= budget) return
  const each = embeds.map((embed) => embed.kind === 'one' ? `${embed.name} 1` : `${embed.name}.limit ${embed.limit}`).join(' + ')
  const lower = [...(limit === undefined ? [] : ['limit']), ...embeds.filter((embed) => embed.kind === 'many').map((embed) => `${embed.name}.limit`)]
  throw invalidInput('querystring', `/${EMBED_PARAMETER}`, `would embed up to ${pageRows * perRow} rows (${limit === undefined ? '1 row' : `limit ${limit}`} × (${each})), ` +
    `past the ${budget} rows one answer of ${name} may embed (maxEmbedRows): ${lower.length > 0 ? `lower ${lower.join(' or ')}, or embed fewer` : 'embed fewer'}`)
}

/** An owner's embedded rows are their own (a superuser's, every row); without an account, a 401. */
function ownerOf (request: FastifyRequest): number | undefined {
  const account = request.account as { id: number, is_superuser: boolean } | null | undefined
  if (account == null) throw notAuthenticated()
  return account.is_superuser ? undefined : account.id
}
