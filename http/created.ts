import type { FastifyReply, FastifyRequest } from 'fastify'

export const locationOf = (request: FastifyRequest, id: number) => `${request.url.split('?')[0]!.replace(/\/$/, '')}/${id}`

export interface CreatedOptions {
  /** What is sent: a value to serialize, or JSON text, which needs `type`. */
  body: unknown
  etag?: string
  type?: string
}

/** Answers a create with 201, the new row's Location, and its ETag when given. */
export function sendCreated (reply: FastifyReply, request: FastifyRequest, row: { id: number }, { body, etag, type }: CreatedOptions): FastifyReply {
  reply.code(201).header('location', locationOf(request, row.id))
  if (etag !== undefined) reply.header('etag', etag)
  if (type !== undefined) reply.type(type)
  return reply.send(body)
}
