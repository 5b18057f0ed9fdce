/** Where time comes from: every expiry, window and timestamp plinth writes reads one clock, so a test moves it instead of waiting. */
export type Clock = () => Date

export const systemClock: Clock = () => new Date()
