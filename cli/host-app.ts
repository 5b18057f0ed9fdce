import { existsSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'

// fastify-plugin's mark on a plugin, with the name plinth's plugins are registered under.
const PLUGIN_META = Symbol.for('plugin-meta')

export type Plugin = ((app: FastifyInstance, options: never) => unknown) & { [PLUGIN_META]?: { name?: string } }
export type Options = Record<string, unknown>

/** How a command changes one of plinth's plugins, known by its fastify-plugin name, as a host app registers it. */
export interface Rewrite {
  plugin?: (plugin: Plugin) => Plugin
  options: (options: Options | undefined) => Options
}

/** Makes `app.register` rewrite plinth's plugins; its child contexts, made with Object.create, inherit the wrapper. */
function rewriteRegistrations (app: FastifyInstance, rewrites: Record<string, Rewrite>) {
  const register = app.register
  app.register = function (this: FastifyInstance, plugin: Plugin, options?: Options | ((parent: FastifyInstance) => Options)) {
    const name = plugin[PLUGIN_META]?.name
    const rewrite = name !== undefined && Object.hasOwn(rewrites, name) ? rewrites[name] : undefined
    if (!rewrite) return register.call(this, plugin as never, options as never)
    const rewritten = typeof options === 'function' ? (parent: FastifyInstance) => rewrite.options(options(parent)) : rewrite.options(options)
    return register.call(this, (rewrite.plugin?.(plugin) ?? plugin) as never, rewritten as never)
  } as unknown as typeof register
}

/** The `--app MODULE` app (its buildApp or default export, called bare), readied; plinth's plugins go through `rewrites`. */
export async function hostApp (path: string, rewrites: Record<string, Rewrite>): Promise<FastifyInstance> {
  const { resolve } = await import('node:path')
  const { pathToFileURL } = await import('node:url')
  const { subscribe, unsubscribe } = await import('node:diagnostics_channel')
  const file = resolve(path)
  if (!existsSync(file)) throw new Error(`--app ${path}: no such file`)
  // Fastify announces each instance it makes, before any plugin is registered on it.
  const onInstance = (message: unknown) => rewriteRegistrations((message as { fastify: FastifyInstance }).fastify, rewrites)
  subscribe('fastify.initialization', onInstance)
  try {
    const module = await import(pathToFileURL(file).href) as { buildApp?: unknown, default?: unknown }
    const build = module.buildApp ?? module.default
    if (typeof build !== 'function') throw new Error(`--app ${path}: the module exports no buildApp function, nor a default one, that builds the app`)
    const app = await build() as FastifyInstance | undefined
    if (typeof app?.ready !== 'function') throw new Error(`--app ${path}: buildApp returned ${String(app)}, not a Fastify app`)
    try {
      await app.ready()
    } catch (error) {
      await app.close()
      throw error
    }
    return app
  } finally {
    unsubscribe('fastify.initialization', onInstance)
  }
}
