from bilm_keras.serving.metrics import ServerMetrics


def test_each_server_has_its_own_registry():
    first, second = ServerMetrics(), ServerMetrics()
    first.requests.labels("/v1/elmo", "200").inc()
    first.tokens.labels("en").inc(7)
    text = first.exposition().decode()
    assert ('bilm_keras_requests_total{route="/v1/elmo",status="200"} 1.0'
            in text)
    assert 'bilm_keras_tokens_total{model="en"} 7.0' in text
    assert "bilm_keras_requests_total{" not in second.exposition().decode()
