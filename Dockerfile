FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY envelopes ./envelopes
COPY organs ./organs
RUN pip install --no-cache-dir . && install -d -m 0700 -o 65534 -g 65534 /etc/ichor/security
USER 65534
ENTRYPOINT ["ichor"]
