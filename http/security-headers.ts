import type { IncomingMessage, ServerResponse } from 'node:http'
import helmet, { type HelmetOptions } from 'helmet'

/** The headers helmet sets for `options`, computed once: @fastify/helmet recomputes them per request, at a high cost in throughput. */
export function securityHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: string) { headers[name.toLowerCase()] = value },
    removeHeader (name: string) { delete headers[name.toLowerCase()] }
  }
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err
  })
  return headers
}

// helmet's headers that steer page rendering: left out, they would cost every response.
const pageHeaders = {
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false
} as const

// What an API response needs (OWASP REST Security Cheat Sheet): no sniffing, no framing, HTTPS only, no cross-origin
// loading outside CORS, a CSP that runs nothing.
export const apiSecurityHeaders = securityHeaders({
  ...pageHeaders,
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: 'deny' }
})

// A host's own routes (its pages, its Swagger UI) keep their scripts and frames: no CSP, framing by its own origin as helmet allows.
export const hostSecurityHeaders = securityHeaders({ ...pageHeaders, contentSecurityPolicy: false, xFrameOptions: { action: 'sameorigin' } })
