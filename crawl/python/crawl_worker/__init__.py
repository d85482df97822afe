"""Crawl-harness workers in Python (``crawl/`` in the repository root): Scrapy with ProxyBroker."""
