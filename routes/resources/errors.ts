import createError from '@fastify/error'
import { inputError } from '../../http/problems.js'

/** `records 7 not found`: the detail names the resource and the id. */
export const RecordNotFound = createError('RESOURCE_NOT_FOUND', '%s %s not found', 404)

export const InvalidResourceOptions = createError('RESOURCE_INVALID_OPTIONS', 'resource plugin: %s')

export const invalidInput = inputError('RESOURCE_INVALID_INPUT')

export const ResourceNotRegistered = createError('RESOURCE_NOT_REGISTERED', 'no resource "%s" is registered on this app: register resourcePlugin with { name: \'%s\' }, awaited, before asking for its table')
