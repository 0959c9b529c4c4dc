# The gateway image. Its steps mirror .ci/run: "services" are the postgres and redis containers of
# docker-compose.yml, "browser" is Debian's chromium (test target), "install" is the same `npm ci` from the
# lock file, "test" is the same `npm test`
# (target `test`). No Docker engine runs on the machines this project is developed on: this file is
# written to match .ci/run but is untested here.
FROM node:20-bookworm-slim AS base
WORKDIR /app
# better-sqlite3 ships prebuilt binaries for this platform; the toolchain is the fallback when none matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

# == install == (as .ci/run)
# native/: the optional addon npm ci builds (malloc_trim, src/memory.ts), a file: dependency of package.json.
COPY package.json package-lock.json ./
COPY native ./native
RUN npm ci --no-audit --no-fund
COPY . .

# == test == (as .ci/run): docker compose --profile test run --rm test
# Chromium for the /docs browser test; the PostgreSQL client and redis-cli for the same checks .ci/run makes.
FROM base AS test
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium postgresql-client redis-tools \
 && rm -rf /var/lib/apt/lists/*
ENV CI=1
CMD ["sh", "-c", "pg_isready -h postgres -p 5432 && redis-cli -h redis ping && npm test"]

# The gateway itself (default target): npm start's command (the esbuild bundle, with V8's memory reducer off: the
# gateway reduces its heap itself after a quiet spell, src/memory.ts), listening on all interfaces.
FROM base AS gateway
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8000 DATA_DIR=/data
RUN npm run build --silent && mkdir -p /data && chown node:node /data
USER node
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD node -e "fetch('http://127.0.0.1:8000/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--no-memory-reducer", "dist/main.js"]
