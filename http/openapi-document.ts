import { createHash } from 'node:crypto'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyInstance, RouteHandlerMethod } from 'fastify'
import { notModified } from './conditional.js'

interface SentDocument {
  /** UTF-8 once: a string would be encoded again on every send. */
  json: Buffer
  hash: string
  encoded: Map<Encoding, Buffer>
}

type Encoding = 'br' | 'gzip'

// Brotli's quality 5: its default, 11, takes tens of times as long for a few percent smaller.
const encoders: Record<Encoding, (json: Buffer) => Buffer> = {
  br: (json) => brotliCompressSync(json, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }),
  gzip: (json) => gzipSync(json)
}
const ENCODINGS = Object.keys(encoders) as Encoding[]

const sent = new WeakMap<object, SentDocument>()

function sentForm (document: object): SentDocument {
  let form = sent.get(document)
  if (!form) {
    const json = Buffer.from(JSON.stringify(document))
    form = { json, hash: createHash('sha256').update(json).digest('base64url').slice(0, 27), encoded: new Map() }
    sent.set(document, form)
  }
  return form
}

function encodedOf (form: SentDocument, encoding: Encoding): Buffer {
  let body = form.encoded.get(encoding)
  if (!body) form.encoded.set(encoding, body = encoders[encoding](form.json))
  return body
}

/** GET of the OpenAPI document, serialized once, compressed when the client takes br or gzip, with one ETag per encoding. */
export function openapiDocument (app: FastifyInstance): RouteHandlerMethod {
  return function sendDocument (request, reply) {
    const form = sentForm(app.swagger())
    const encoding = negotiate(request.headers['accept-encoding'] ?? '', ENCODINGS) as Encoding | null
    reply.header('vary', 'accept-encoding').header('cache-control', 'no-cache')
    if (notModified(request, reply, `"${encoding ? `${form.hash}-${encoding}` : form.hash}"`)) return reply
    reply.type('application/json; charset=utf-8')
    return encoding ? reply.header('content-encoding', encoding).send(encodedOf(form, encoding)) : reply.send(form.json)
  }
}
