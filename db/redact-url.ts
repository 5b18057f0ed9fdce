// A URL's userinfo runs from "://" to the last "@" before the host: a password may hold an unencoded "@", "/" or "#".
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i
const URL_IN_TEXT = /([a-z][a-z0-9+.-]*:\/\/)([^\s"'`<>]*)@/gi

/** `scheme://user:***@`: the user stays, as PostgreSQL's own messages name it; the password never shows. */
function masked (scheme: string, userinfo: string): string {
  const colon = userinfo.indexOf(':')
  return `${scheme}${colon === -1 ? userinfo : `${userinfo.slice(0, colon)}:***`}@`
}

/** `url` as it can be printed: the password of its userinfo replaced with `***`, however malformed the URL. */
export function redactUrl (url: string): string {
  const scheme = SCHEME.exec(url)?.[0]
  const at = url.lastIndexOf('@')
  if (scheme === undefined || at < scheme.length) return url
  return `${masked(scheme, url.slice(scheme.length, at))}${url.slice(at + 1)}`
}

export function redactUrls (text: string): string {
  return text.replace(URL_IN_TEXT, (_match, scheme: string, userinfo: string) => masked(scheme, userinfo))
}

/** A copy of `value` (a logged error, serialized) with the password of every URL in its strings replaced with `***`. */
export function redactUrlsIn (value: unknown): unknown {
  if (typeof value === 'string') return redactUrls(value)
  if (Array.isArray(value)) return value.map(redactUrlsIn)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, redactUrlsIn(entry)]))
}
