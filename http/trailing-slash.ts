import type { FastifyInstance } from 'fastify'

type Declare = (this: FastifyInstance, path: string, options: { schema?: object }, handler: unknown) => FastifyInstance

// The shorthands plinth's routes are declared with.
const SHORTHANDS = ['delete', 'get', 'patch', 'post', 'put'] as const

/** Whether the app's router takes `/x/` for `/x` already, as plinth's server sets it (`ignoreTrailingSlash`). */
function ignoresTrailingSlash (app: FastifyInstance): boolean {
  const config = app.initialConfig as { routerOptions?: { ignoreTrailingSlash?: boolean }, ignoreTrailingSlash?: boolean }
  return config.routerOptions?.ignoreTrailingSlash === true || config.ignoreTrailingSlash === true
}

/** A route's URL without the trailing slash of its alias: one rate-limit count and one metrics series per route. */
export const canonicalUrl = (url: string) => url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url

/**
 * Makes this plugin's routes answer with and without a trailing slash in any host, as they do in
 * plinth's server, without touching the host's router: each route declared here is declared twice,
 * at its path without the slash and, hidden from the OpenAPI document, with it. Both are declared
 * from the route's own options, as Fastify declares HEAD routes, so the host's onRoute hooks see
 * each once; a copy made in an onRoute hook would carry what those hooks had already added.
 */
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
