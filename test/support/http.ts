// Requests to a real listening server, for the tests that are about the network; every other
// test uses app.inject.

export interface HttpRequestOptions {
  /** GET when there is no body and POST when there is, unless given. */
  method?: string
  /** Sent as application/json. */
  json?: unknown
  /** Sent as application/x-www-form-urlencoded, as the OAuth2 password login expects. */
  form?: Record<string, string>
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string
  /** Aborts the request after this long; by default it waits as long as the test does. */
  timeoutMs?: number
  /** Any other request headers. */
  headers?: Record<string, string>
}

/** What the server answered: `json` is the body parsed, or undefined when it is not JSON. */
export interface HttpAnswer {
  status: number
  headers: Headers
  text: string
  json: any
}

/** The method, headers and body that `options` describe, for fetch or node:http. */
export function requestParts ({ method, json, form, token, headers: extra }: HttpRequestOptions) {
  const headers: Record<string, string> = { ...extra }
  let body: string | undefined
  if (token) headers.authorization = `Bearer ${token}`
  if (json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(json)
  }
  if (form) {
    headers['content-type'] = 'application/x-www-form-urlencoded'
    body = new URLSearchParams(form).toString()
  }
  return { method: method ?? (body === undefined ? 'GET' : 'POST'), headers, body }
}

/** One request by fetch to `path` on the server listening at `base`, its body read to the end. */
export async function httpRequest (base: string, path: string, options: HttpRequestOptions = {}): Promise<HttpAnswer> {
  const res = await fetch(new URL(path, base), {
    ...requestParts(options),
    signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs)
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: parseJson(text) }
}

export function parseJson (text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
