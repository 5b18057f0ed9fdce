import type { FastifyRequest } from 'fastify'

/** Query parameters whose value is a credential: an event stream's single-use ticket. */
const SECRET_PARAMETERS = new Set(['ticket'])

function decoded (text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return text
  }
}

/** `url` with the value of each secret query parameter replaced by `[redacted]`, its name matched as the query parser decodes it. */
export function withoutSecrets (url: string): string {
  const start = url.indexOf('?')
  if (start === -1) return url
  const end = url.indexOf('#', start)
  const query = url.slice(start + 1, end === -1 ? undefined : end)
  const redacted = query.split('&').map((pair) => {
    const equals = pair.indexOf('=')
    const name = equals === -1 ? pair : pair.slice(0, equals)
    return SECRET_PARAMETERS.has(decoded(name)) ? `${name}=[redacted]` : pair
  }).join('&')
  return `${url.slice(0, start + 1)}${redacted}${end === -1 ? '' : url.slice(end)}`
}

/** Fastify's own `req` serializer, the URL without its secrets: a ticket in the log could open a stream until it is used. */
export function requestLogSerializer (request: FastifyRequest) {
  return {
    method: request.method,
    url: withoutSecrets(request.url),
    version: request.headers?.['accept-version'] as string | undefined,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}
