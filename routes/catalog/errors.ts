import createError from '@fastify/error'
import { inputError } from '../../http/problems.js'

export const ItemNotFound = createError('CATALOG_ITEM_NOT_FOUND', 'item %s not found', 404)

export const InvalidCatalogOptions = createError('CATALOG_INVALID_OPTIONS', 'catalog plugin: %s')

export const invalidInput = inputError('CATALOG_INVALID_INPUT')
