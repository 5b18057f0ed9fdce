import helmet from '@fastify/helmet'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * Security headers on every response (helmet's defaults: nosniff, frame and referrer policies,
 * HSTS...), with a content security policy that Swagger UI at /docs still runs under: its scripts
 * and styles come from this origin, its icons are data: URLs. Register it after the docs plugin so
 * the hashes Swagger UI publishes, if any, are allowed too.
 */
async function securityPlugin (app: FastifyInstance) {
  const swagger = app.hasDecorator('swaggerCSP') ? app.swaggerCSP : { script: [], style: [] }
  await app.register(helmet, {
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
}

export default fp(securityPlugin, { name: 'security', fastify: '5.x' })
