# The worker of deploy/docker-compose.yaml: this checkout with its locked environment.
FROM python:3.11-slim
RUN pip install --no-cache-dir uv
WORKDIR /app
COPY pyproject.toml uv.lock README.md ./
COPY flows flows
COPY tasks tasks
COPY environments environments
COPY schemas schemas
COPY deploy deploy
RUN uv sync --frozen --no-dev
ENV PATH=/app/.venv/bin:$PATH
