/** A response as inject or the raw HTTP client saw it. */
export interface Answer {
  statusCode: number
  headers: Record<string, unknown>
  body: string
}

const PROBLEM_MEDIA_TYPE = /^application\/problem\+json(;|$)/
const JSON_MEDIA_TYPE = /^application\/json(;|$)/
const OAUTH_ERRORS = ['invalid_request', 'invalid_client', 'invalid_grant', 'unsupported_grant_type', 'invalid_scope']

/**
 * What is wrong with a response under the error contract, or undefined: never a 5xx, and every
 * 4xx a problem document whose `status` is the HTTP status, with a string `detail` and `code`.
 * The OAuth endpoints' errors are problem documents served as application/json with RFC 6749's
 * `error` and `error_description` too.
 */
export function contractViolation (answer: Answer): string | undefined {
  const status = answer.statusCode
  if (status >= 500) return `status ${status}`
  if (status < 400) return undefined
  const type = String(answer.headers['content-type'] ?? '')
  const oauth = JSON_MEDIA_TYPE.test(type)
  if (!PROBLEM_MEDIA_TYPE.test(type) && !oauth) return `a ${status} of content type "${type}", not application/problem+json`
  let body: { detail?: unknown, status?: unknown, code?: unknown, error?: unknown, error_description?: unknown }
  try {
    body = JSON.parse(answer.body)
  } catch {
    return `a ${status} whose body is not JSON`
  }
  if (oauth && !(OAUTH_ERRORS.includes(String(body?.error)) && body.error_description === body.detail)) {
    return `a ${status} of content type "${type}" that is not an RFC 6749 error`
  }
  if (typeof body?.detail !== 'string') return `a ${status} without a string detail`
  if (body.status !== status) return `a ${status} whose body says status ${JSON.stringify(body.status)}`
  if (typeof body.code !== 'string') return `a ${status} without a string code`
  return undefined
}

const clip = (text: string, length = 400) => text.length > length ? `${text.slice(0, length)}... (${text.length} characters)` : text

/** The request (as the fuzzer wrote it) and the response, clipped: a failure names what to replay. */
export function describeExchange (request: string, answer: Answer) {
  return `request: ${clip(request, 700)}\nresponse: ${answer.statusCode} ${String(answer.headers['content-type'] ?? '')} ${clip(answer.body)}`
}

/** Status counts per route, for the summary and the "some requests succeeded" check. */
export class Tally {
  private readonly counts = new Map<string, Map<number, number>>()

  count (route: string, status: number) {
    const statuses = this.counts.get(route) ?? new Map<number, number>()
    statuses.set(status, (statuses.get(status) ?? 0) + 1)
    this.counts.set(route, statuses)
  }

  successes (route: string) {
    return [...this.counts.get(route) ?? []].reduce((sum, [status, n]) => status < 300 ? sum + n : sum, 0)
  }

  total () {
    return [...this.counts.values()].reduce((sum, statuses) => sum + [...statuses.values()].reduce((a, b) => a + b, 0), 0)
  }

  /** `GET /api/v1/items: 200 x41, 422 x180, ...`, one line per route. */
  summary () {
    return [...this.counts].map(([route, statuses]) =>
      `${route}: ${[...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status} x${n}`).join(', ')}`).join('\n')
  }
}
