"""What the service tests share."""
CONCURRENT = ('Another thread concurrently updated the resource provider data. '
              'Please retry your update')
