import type { FastifyInstance } from 'fastify'

type Declare = (this: FastifyInstance, path: string, options: { schema?: object }, handler: unknown) => FastifyInstance

const SHORTHANDS = ['delete', 'get', 'patch', 'post', 'put'] as const

function ignoresTrailingSlash (app: FastifyInstance): boolean {
  const config = app.initialConfig as { routerOptions?: { ignoreTrailingSlash?: boolean }, ignoreTrailingSlash?: boolean }
  return config.routerOptions?.ignoreTrailingSlash === true || config.ignoreTrailingSlash === true
}

/** A route's URL without the trailing slash of its alias: one rate-limit count and one metrics series per route. */
export const canonicalUrl = (url: string) => url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url

// Both are declared from the route's own options, as Fastify declares HEAD routes, so the host's onRoute hooks see each once.
/** Routes answer with and without a trailing slash in any host: each is declared twice, the slashed one hidden from OpenAPI. */
export function trailingSlashAliases (app: FastifyInstance) {
  if (ignoresTrailingSlash(app)) return
  const shorthands = app as unknown as Record<typeof SHORTHANDS[number], Declare>
  for (const method of SHORTHANDS) {
    const declare = shorthands[method]
    shorthands[method] = function declareBoth (path, options, handler) {
      // `/` is the plugin's prefix itself (each plinth plugin that declares it has one): declared as ''.
      const canonical = path.replace(/\/$/, '')
      declare.call(this, canonical, options, handler)
      // `slash`: the prefix's `/` with its slash only, as the canonical route is the prefix alone.
      return declare.call(this, `${canonical}/`, { ...options, prefixTrailingSlash: 'slash', schema: { ...options.schema, hide: true } } as typeof options, handler)
    }
  }
}
