import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import { problemResponses } from '../../schemas/error.js'
import { EMBED_PARAMETER } from './list-query.js'

/** What the document says of one embed a resource offers. */
export interface DocumentedEmbed {
  name: string
  kind: 'one' | 'many'
  /** The reference field: this row's (one), or the embedded rows' (many). */
  column: string
  /** The embedded resource, and the component of its row. */
  of: string
  rowId: string
  defaultLimit: number
  maxLimit: number
  /** Its read guard is not this route's own, so it may refuse a request this route lets through. */
  guarded: boolean
}

type Schema = Record<string, unknown>

interface RouteSchema { querystring?: TSchema, response: Record<string | number, unknown>, security?: unknown }

/** `query` (or an empty one) with the `embed` parameter, which the preValidation takes out before validation; described at ready. */
function withEmbedParameter (query?: TObject): TObject {
  const embed = Type.Optional(Type.String({ description: 'Related rows to put inline, comma-separated' }))
  return Type.Object({ ...query?.properties, [EMBED_PARAMETER]: embed }, query?.additionalProperties === undefined ? {} : { additionalProperties: query.additionalProperties })
}

/** A route's schema with the embed parameter: a copy of its own, whose querystring and 200 documentEmbeds changes. */
export function withEmbeds<S extends object> (schema: S): S {
  const { querystring, response } = schema as RouteSchema
  const ok = response[200] as Schema
  const copied = ok.type === 'array' ? { ...ok, items: { ...ok.items as Schema } } : { ...ok }
  return { ...schema, querystring: withEmbedParameter(querystring as TObject | undefined), response: { ...response, 200: copied } }
}

function description (name: string, embeds: DocumentedEmbed[], budget: number): string {
  const each = embeds.map((embed) => embed.kind === 'one'
    ? `\`${embed.name}\`: the ${embed.of} row \`${embed.column}\` references, or null`
    : `\`${embed.name}\`: the ${embed.of} rows whose \`${embed.column}\` is this row's id (\`${embed.name}.limit\`, default ${embed.defaultLimit}, ` +
      `at most ${embed.maxLimit}; \`${embed.name}.sort\`; and the filters of ${embed.of} as \`${embed.name}.<filter>\`)`)
  return `Related rows to put inline in each ${name} row, comma-separated: ${each.join('; ')}. ` +
    'Each needs what its own resource\'s reads need, and shows only the rows they would show; writeOnly fields never. ' +
    `One answer embeds at most ${budget} rows, counted from the request: the page's rows times the sum of each embed's limit (1 for a single row); past it, 422.`
}

/** Documents the embeds on the routes' schemas (from withEmbeds), which the document reads after ready; their validation was compiled before. */
export function documentEmbeds (name: string, embeds: DocumentedEmbed[], budget: number, schemas: { list: object, get: object }) {
  const members: Schema = Object.fromEntries(embeds.map((embed) => [embed.name, embed.kind === 'one'
    ? { anyOf: [{ $ref: embed.rowId }, { type: 'null' }], description: `With embed=${embed.name}` }
    : { type: 'array', items: { $ref: embed.rowId }, description: `With embed=${embed.name}` }]))
  for (const schema of [schemas.list, schemas.get] as RouteSchema[]) {
    const query = schema.querystring as TObject
    if (embeds.length === 0) {
      delete query.properties[EMBED_PARAMETER]
      continue
    }
    query.properties[EMBED_PARAMETER]!.description = description(name, embeds, budget)
    for (const embed of embeds.filter((each) => each.kind === 'many')) {
      query.properties[`${embed.name}.limit`] = Type.Optional(Type.Integer({ minimum: 1, default: embed.defaultLimit, description: `With embed=${embed.name}: at most this many, up to ${embed.maxLimit}` }))
      query.properties[`${embed.name}.sort`] = Type.Optional(Type.String({ description: `With embed=${embed.name}: their order, as the sort of ${embed.of}` }))
    }
    const ok = schema.response[200] as Schema
    const row = ok.type === 'array' ? ok.items as Schema : ok
    const { $ref, ...rest } = row
    for (const key of Object.keys(row)) delete row[key]
    Object.assign(row, rest, { allOf: [{ $ref }, { type: 'object', properties: members }] })
    if (embeds.some((embed) => embed.guarded)) {
      for (const [status, response] of Object.entries(problemResponses(401, 403))) schema.response[status] ??= response
      schema.security ??= [{}, { OAuth2PasswordBearer: [] }]
    }
  }
}
