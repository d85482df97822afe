/** Redis keys the harness sets up for the seed strategies (and the shared page queue). */
export const QUEUE_KEY = "crawl:queue";
export const SEED003_POOL_KEY = "proxy:pool";
