import type { FastifyInstance, FastifyRequest } from 'fastify'

/** Marks the routes added after this call, here or in a child context, as plinth's own (the host's keep their headers). */
export function markPlinthRoutes (app: FastifyInstance) {
  app.addHook('onRoute', function plinthRoute (route) {
    route.config = { ...route.config, plinthRoute: true } as typeof route.config
  })
}

/** Whether the request reached one of plinth's routes; a request no route matched counts as plinth's, whose 404 it gets. */
export const onPlinthRoute = (request: FastifyRequest) =>
  request.is404 || (request.routeOptions.config as { plinthRoute?: boolean }).plinthRoute === true
