import createError from '@fastify/error'

/** `records 7 not found`: the detail names the resource and the id. */
export const RecordNotFound = createError('RESOURCE_NOT_FOUND', '%s %s not found', 404)

export const InvalidResourceOptions = createError('RESOURCE_INVALID_OPTIONS', 'resource plugin: %s')
