import formbody from '@fastify/formbody'
import type { FastifyRequest } from 'fastify'
import type { App } from '../../http/types.js'
import { FORM_TYPES } from '../../http/validation.js'
import { FormNotTaken } from './errors.js'

const URLENCODED = 'application/x-www-form-urlencoded'
const FORMS = new Set(FORM_TYPES)

/** A form sent to a route with a body, but the OAuth endpoints (the only ones that declare what they consume), is 415 before its body is read. */
async function refuseForms (request: FastifyRequest) {
  const type = request.headers['content-type']?.split(';', 1)[0]!.trim().toLowerCase()
  if (type === undefined || !FORMS.has(type)) return
  const { consumes, body } = (request.routeOptions.schema ?? {}) as { consumes?: string[], body?: unknown }
  // A route without a body never reads one, whatever its type says.
  if (consumes === undefined && body !== undefined) throw new FormNotTaken(type)
}

/** Forms for the OAuth endpoints only: the parser (or the host's own; a second fails the boot), and 415 for a form on the other routes. */
export async function formsForOAuthOnly (app: App) {
  if (!app.hasContentTypeParser(URLENCODED)) await app.register(formbody)
  app.addHook('onRequest', refuseForms)
}
