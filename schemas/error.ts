import { Type, type Static } from '@sinclair/typebox'
import { ref } from './common.js'

/** RFC 9457 problem document: the body of every error response. */
export const ProblemSchema = Type.Object({
  type: Type.String({ examples: ['about:blank'] }),
  title: Type.String({ examples: ['Not Found'] }),
  status: Type.Integer({ minimum: 400, maximum: 599, examples: [404] }),
  detail: Type.String({ examples: ['item 7 not found'] }),
  code: Type.String({ description: 'Stable machine-readable error name', examples: ['CATALOG_ITEM_NOT_FOUND'] })
}, { $id: 'Problem', title: 'Problem', description: 'RFC 9457 problem document' })

export type Problem = Static<typeof ProblemSchema>

export const ValidationProblemSchema = Type.Object({
  ...ProblemSchema.properties,
  errors: Type.Array(Type.Object({
    path: Type.String({ description: 'JSON pointer into the request part', examples: ['/body/price'] }),
    message: Type.String({ examples: ['must be >= 0'] })
  }))
}, { $id: 'ValidationProblem', title: 'ValidationProblem', description: 'Problem document of a request that failed its schema' })

export type ValidationProblem = Static<typeof ValidationProblemSchema>

/**
 * Response schemas for the error statuses a route can return: 422 carries `errors[]`,
 * every other status the plain problem document.
 */
export function problemResponses (...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [
    status,
    ref(status === 422 ? ValidationProblemSchema : ProblemSchema)
  ]))
}
