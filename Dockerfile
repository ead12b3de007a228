# The server (API + worker) on Node 24 LTS. Debian-based on purpose: the Temporal SDK's native module has no
# musl build.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
# python3 and bubblewrap run custom tools in the local sandbox.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 bubblewrap ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8283 DATA_DIR=/data
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The pages' files (the approval page, the AG-UI chat page), served as they are (no build step).
COPY --from=build /app/public ./public
# Read by python3 to derive Python tools' schemas (not compiled: it is Python).
COPY --from=build /app/src/tools/python ./src/tools/python
# Run by node inside the sandbox for TypeScript tools (plain JavaScript, not compiled).
COPY --from=build /app/src/sandbox/node ./src/sandbox/node
COPY --from=build /app/src/sandbox/python ./src/sandbox/python
EXPOSE 8283
CMD ["node", "dist/src/main.js"]
