FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY envelopes ./envelopes
COPY organs ./organs
RUN pip install --no-cache-dir .
USER 65534
ENTRYPOINT ["ichor"]
