import type { IncomingMessage, ServerResponse } from 'node:http'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'
import { DOCS_PREFIX } from './docs.js'
import type { App } from './validation.js'

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

// What an API response needs (OWASP REST Security Cheat Sheet): no sniffing, no framing, HTTPS only, no cross-origin
// loading outside CORS, a CSP that runs nothing. helmet's other headers steer page rendering and would cost every response.
export const apiSecurityHeaders = securityHeaders({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: 'deny' },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false
})

/** Security headers on every response: the API set, or for Swagger UI's pages a CSP they run under (register after docs, for its hashes). */
async function securityPlugin (app: App) {
  if (app.hasPlugin('@fastify/helmet')) {
    app.log.info('security: the app has its own @fastify/helmet; its headers are left to it')
    return
  }
  const swagger = app.hasDecorator('swaggerCSP') ? app.swaggerCSP : { script: [], style: [] }
  const documentHeaders = securityHeaders({
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", ...swagger.script],
        styleSrc: ["'self'", 'https:', "'unsafe-inline'", ...swagger.style],
        imgSrc: ["'self'", 'data:'],
        // Helmet's default would send Swagger UI's own requests to https:// on a plain-http deployment.
        upgradeInsecureRequests: null
      }
    }
  })
  app.addHook('onRequest', function securityHeaders (request, reply, done) {
    reply.headers(request.url.startsWith(DOCS_PREFIX) ? documentHeaders : apiSecurityHeaders)
    done()
  })
}

export default fp(securityPlugin, { name: 'plinth-security', fastify: '5.x' })
