# syntax=docker/dockerfile:1
# One image per binary, each a named target: `docker build --target grove-webhook .` builds only
# what that image needs (make docker-build builds all four). The builder runs on the build
# machine's platform and cross-compiles, so multi-platform builds need no emulation.

FROM --platform=$BUILDPLATFORM golang:1.26 AS source
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
ENV GOOS=$TARGETOS GOARCH=$TARGETARCH

# ---- grove-operator
FROM source AS build-grove-operator
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/grove-operator ./cmd/grove-operator

FROM gcr.io/distroless/static:nonroot AS grove-operator
COPY --from=build-grove-operator /out/grove-operator /grove-operator
USER 65532:65532
ENTRYPOINT ["/grove-operator"]

# ---- grove-webhook
FROM source AS build-grove-webhook
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/grove-webhook ./cmd/grove-webhook

FROM gcr.io/distroless/static:nonroot AS grove-webhook
COPY --from=build-grove-webhook /out/grove-webhook /grove-webhook
USER 65532:65532
ENTRYPOINT ["/grove-webhook"]

# ---- backend-controller
FROM source AS build-backend-controller
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/backend-controller ./cmd/backend-controller

FROM gcr.io/distroless/static:nonroot AS backend-controller
COPY --from=build-backend-controller /out/backend-controller /backend-controller
USER 65532:65532
ENTRYPOINT ["/backend-controller"]

# ---- trainer-controller
FROM source AS build-trainer-controller
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/trainer-controller ./cmd/trainer-controller

FROM gcr.io/distroless/static:nonroot AS trainer-controller
COPY --from=build-trainer-controller /out/trainer-controller /trainer-controller
USER 65532:65532
ENTRYPOINT ["/trainer-controller"]
