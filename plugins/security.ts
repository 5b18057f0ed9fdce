import fp from 'fastify-plugin'
import { apiSecurityHeaders, hostSecurityHeaders, securityHeaders } from '../http/security-headers.js'
import { onPlinthRoute } from '../http/plinth-routes.js'
import { DOCS_PREFIX } from './docs.js'
import type { App } from '../http/types.js'

export { apiSecurityHeaders }

/**
 * Security headers on every response: the API set on plinth's routes, for Swagger UI's pages a CSP they run under
 * (register after docs, for its hashes), and on the host's own routes the same without a CSP, which would block its pages' scripts.
 */
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
    reply.headers(request.url.startsWith(DOCS_PREFIX) ? documentHeaders : onPlinthRoute(request) ? apiSecurityHeaders : hostSecurityHeaders)
    done()
  })
}

export default fp(securityPlugin, { name: 'plinth-security', fastify: '5.x' })
