# The gateway as a container image, built from a clone of this repository:
#   docker build -t mcp-oauth-guard:0.1.0 .
#   docker run --init -p 8080:8080 -e MCP_AUTH_RESOURCE=https://mcp.example.com/mcp \
#     -e MCP_AUTH_ISSUER=https://auth.example.com -e MCP_AUTH_UPSTREAM=http://mcp-server:3001/mcp mcp-oauth-guard:0.1.0
# Settings are environment variables (docs/configuration.md); what to set, and why --init: docs/deployment.md.

# Build stage: every dependency, to compile src/ into dist/.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
# --ignore-scripts: `prepare` would build before src/ is copied; the build runs below.
RUN npm ci --ignore-scripts
COPY src ./src
RUN npm run build

# Runtime stage: the runtime dependencies and dist/ only.
FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json LICENSE ./
# --ignore-scripts: `prepare` (the build) needs the development dependencies, which this stage leaves out.
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
# The official image's unprivileged user (uid 1000).
USER node
# In a container the gateway listens on every interface; MCP_AUTH_RESOURCE (the public URL) is then required.
ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080
# Liveness: /healthz answers 200 while the gateway serves (503 while it stops). The image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The gateway itself as the container's process, not npx: SIGTERM (docker stop) reaches it and stops it gracefully.
CMD ["node", "dist/gateway/cli.js"]
