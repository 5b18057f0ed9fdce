import type { FastifyInstance } from 'fastify'

export const ROUTE_PLUGINS = ['plinth-health', 'plinth-accounts', 'plinth-catalog', 'plinth-resource']

/** Fails the boot when one of plinth's route plugins was registered before `plugin`, which must precede them. */
export function assertBeforeRoutes (app: FastifyInstance, plugin: string, why: string) {
  const early = ROUTE_PLUGINS.filter((name) => app.hasPlugin(name))
  if (early.length > 0) throw new Error(`${plugin} must be registered before ${early.join(', ')}: ${why}`)
}
