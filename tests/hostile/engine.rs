// The engine half of the hardening suite (paths, redirects, caps, concurrency, headers).
