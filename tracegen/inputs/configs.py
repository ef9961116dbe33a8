"""YAML-like configuration snippets: 10 categories, indentation preserved, multi-document where natural."""

from __future__ import annotations

import random
from collections.abc import Callable

Generated = tuple[str, dict]

NAMES = ("web", "api", "billing", "search", "auth", "worker", "gateway", "reports", "notify", "orders")
IMAGES = ("nginx", "redis", "postgres", "python", "node", "httpd", "busybox", "alpine")
TAGS = ("stable", "latest", "1.25", "3.12-slim", "7.2", "16-alpine", "lts")
REGIONS = ("us-east-1", "eu-west-1", "ap-south-1", "us-west-2")


def _name(rng: random.Random) -> str:
    return f"{rng.choice(NAMES)}-{rng.choice(('app', 'svc', 'core', 'v2', 'prod'))}"


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def app_config(rng: random.Random) -> Generated:
    """An application settings file."""
    name = _name(rng)
    lines = [
        "app:",
        f"  name: {name}",
        f"  version: {rng.randint(0, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}",
        f"  debug: {rng.choice(('true', 'false'))}",
    ]
    if rng.random() < 0.6:
        lines += ["database:", f"  host: db.{rng.choice(NAMES)}.local", f"  port: {rng.choice((5432, 3306, 27017))}"]
    if rng.random() < 0.5:
        lines += ["logging:", f"  level: {rng.choice(('info', 'debug', 'warn'))}"]
    return _join(lines), {"name": name}


def k8s_deployment(rng: random.Random) -> Generated:
    """A Kubernetes Deployment, sometimes followed by its Service as a second document."""
    name, port = _name(rng), rng.choice((80, 8080, 3000, 5000))
    lines = [
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata:",
        f"  name: {name}",
        "spec:",
        f"  replicas: {rng.randint(1, 6)}",
        "  template:",
        "    metadata:",
        "      labels:",
        f"        app: {name}",
        "    spec:",
        "      containers:",
        f"        - name: {name}",
        f"          image: {rng.choice(IMAGES)}:{rng.choice(TAGS)}",
        "          ports:",
        f"            - containerPort: {port}",
    ]
    multi = rng.random() < 0.4
    if multi:
        lines += ["---", "apiVersion: v1", "kind: Service", "metadata:", f"  name: {name}", "spec:", "  ports:"]
        lines += [f"    - port: {port}"]
    return _join(lines), {"name": name, "documents": 2 if multi else 1}


def docker_compose(rng: random.Random) -> Generated:
    """A Docker Compose file with one or two services."""
    lines = [f'version: "3.{rng.randint(0, 9)}"', "services:"]
    for _ in range(rng.randint(1, 2)):
        lines += [f"  {rng.choice(NAMES)}:", f"    image: {rng.choice(IMAGES)}:{rng.choice(TAGS)}", "    ports:"]
        lines += [f'      - "{rng.randint(3000, 9999)}:{rng.choice((80, 443, 5432))}"']
    return _join(lines), {}


def helm_values(rng: random.Random) -> Generated:
    """Helm chart values, opened by a comment and a document marker."""
    lines = [
        f"# Default values for {rng.choice(NAMES)}chart",
        "---",
        f"replicaCount: {rng.randint(1, 5)}",
        "image:",
        f"  repository: {rng.choice(IMAGES)}",
        f"  tag: {rng.choice(TAGS)}",
    ]
    if rng.random() < 0.5:
        lines += ["service:", f"  type: {rng.choice(('ClusterIP', 'NodePort'))}", f"  port: {rng.choice((80, 443))}"]
    return _join(lines), {}


def ansible_playbook(rng: random.Random) -> Generated:
    """An Ansible playbook installing one or two packages."""
    lines = [f"- hosts: {rng.choice(('all', 'web', 'db', 'workers'))}", "  tasks:"]
    for pkg in rng.sample(("git", "curl", "nginx", "htop", "vim", "make"), rng.randint(1, 2)):
        lines += [f"    - name: ensure {pkg} installed", "      apt:", f"        name: {pkg}"]
        lines += [f"        state: {rng.choice(('present', 'latest'))}"]
    return _join(lines), {}


def prometheus_config(rng: random.Random) -> Generated:
    """A Prometheus scrape configuration."""
    job = rng.choice(("node-exporter", "api", "cadvisor", "postgres"))
    lines = [
        "global:",
        f"  scrape_interval: {rng.choice((5, 10, 15, 30, 60))}s",
        "scrape_configs:",
        f"  - job_name: '{job}'",
        "    static_configs:",
        f"      - targets: ['localhost:{rng.randint(9000, 9999)}']",
    ]
    return _join(lines), {"job": job}


def github_actions(rng: random.Random) -> Generated:
    """A GitHub Actions workflow."""
    lines = [
        f"name: {rng.choice(('CI', 'Tests', 'Build', 'Lint'))}",
        f"on: [{rng.choice(('push', 'push, pull_request', 'pull_request'))}]",
        "jobs:",
        "  test:",
        f"    runs-on: {rng.choice(('ubuntu-latest', 'macos-latest', 'windows-latest'))}",
        "    steps:",
        f"      - uses: actions/checkout@v{rng.randint(2, 4)}",
    ]
    if rng.random() < 0.6:
        lines += [f"      - run: {rng.choice(('pytest -q', 'make test', 'npm test', 'cargo test'))}"]
    return _join(lines), {}


def circleci_config(rng: random.Random) -> Generated:
    """A CircleCI pipeline."""
    lines = [
        "version: 2.1",
        "jobs:",
        "  build:",
        "    docker:",
        f"      - image: cimg/python:3.{rng.randint(8, 13)}",
        "    steps:",
        "      - checkout",
        f"      - run: {rng.choice(('pytest', 'make test', 'tox', 'python -m unittest'))}",
    ]
    if rng.random() < 0.5:
        lines[2:2] = [f"  # build job {rng.randint(1, 99)}"]
    if rng.random() < 0.5:
        lines += ["workflows:", "  main:", "    jobs:", "      - build"]
    return _join(lines), {}


def cloudformation(rng: random.Random) -> Generated:
    """An AWS CloudFormation template with one bucket."""
    bucket = f"{rng.choice(NAMES)}-bucket-{rng.randint(0, 999)}"
    lines = [
        "AWSTemplateFormatVersion: '2010-09-09'",
        "Resources:",
        f"  {rng.choice(('Data', 'Logs', 'Assets'))}Bucket:",
        "    Type: AWS::S3::Bucket",
        "    Properties:",
        f"      BucketName: {bucket}",
    ]
    return _join(lines), {"bucket": bucket}


def terraform(rng: random.Random) -> Generated:
    """A Terraform module (HCL, the one brace-based member of the family)."""
    bucket = f"{rng.choice(NAMES)}-tf-{rng.randint(0, 999)}"
    lines = [
        "terraform {",
        f'  required_version = ">= 1.{rng.randint(0, 9)}"',
        "}",
        f'provider "aws" {{ region = "{rng.choice(REGIONS)}" }}',
        'resource "aws_s3_bucket" "b" {',
        f'  bucket = "{bucket}"',
        f'  acl    = "{rng.choice(("private", "public-read"))}"',
        "}",
    ]
    return _join(lines), {"bucket": bucket}


GENERATORS: dict[str, Callable[[random.Random], Generated]] = {
    "app_config": app_config,
    "k8s_deployment": k8s_deployment,
    "docker_compose": docker_compose,
    "helm_values": helm_values,
    "ansible_playbook": ansible_playbook,
    "prometheus_config": prometheus_config,
    "github_actions": github_actions,
    "circleci_config": circleci_config,
    "cloudformation": cloudformation,
    "terraform": terraform,
}
